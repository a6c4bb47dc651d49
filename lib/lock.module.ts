import { Module } from '@nestjs/common';
import { LOCK_MODULE_OPTIONS, ConfigurableLockModule, RESOLVED_LOCK_OPTIONS } from './lock.module-definition';
import { LockModuleOptions, resolveLockOptions, ResolvedLockOptions } from './lock.options';
import { LockService } from './lock.service';
import { LockEngine } from './runtime/lock-engine';

/**
 * `LockModule.forRoot(options)` / `LockModule.forRootAsync({ imports, inject, useFactory, isGlobal })`.
 * Options are validated when the module is instantiated, before any Redis connection opens.
 */
@Module({
  providers: [
    {
      provide: RESOLVED_LOCK_OPTIONS,
      inject: [LOCK_MODULE_OPTIONS],
      useFactory: (options: LockModuleOptions) => resolveLockOptions(options),
    },
    {
      provide: LockEngine,
      inject: [RESOLVED_LOCK_OPTIONS],
      useFactory: (options: ResolvedLockOptions) => new LockEngine(options),
    },
    LockService,
  ],
  exports: [LockService],
})
export class LockModule extends ConfigurableLockModule {}
