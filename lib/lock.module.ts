import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { LockExplorer } from './decorators/lock-explorer';
import { LockErrorFilter } from './http/lock-error.filter';
import { LockRequestInterceptor } from './http/lock-request.interceptor';
import { LOCK_MODULE_OPTIONS, LOCK_MODULE_OPTIONS_TYPE, ConfigurableLockModule, RESOLVED_LOCK_OPTIONS } from './lock.module-definition';
import { LockInspector } from './introspection/lock-inspector';
import { LockModuleOptions, resolveLockOptions, ResolvedLockOptions } from './lock.options';
import { LockService } from './lock.service';
import { FairLockService } from './fair-lock.service';
import { ReadWriteLockService } from './read-write-lock.service';
import { LockEngine } from './engine/lock-engine';
import { EngineSeam, LOCK_ENGINE_SEAM } from './engine/engine-seam';
import { SemaphoreService } from './semaphores/semaphore.service';

/**
 * `LockModule.forRoot(options)` / `LockModule.forRootAsync({ imports, inject, useFactory, isGlobal })`.
 * Global by default (`isGlobal: false` keeps it to the modules that import it). Options are validated when the module is instantiated, before any Redis connection opens.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: RESOLVED_LOCK_OPTIONS,
      inject: [LOCK_MODULE_OPTIONS],
      useFactory: (options: LockModuleOptions) => resolveLockOptions(options),
    },
    {
      provide: LockEngine,
      // The seam is provided only by the testing kit (in-memory connections).
      inject: [RESOLVED_LOCK_OPTIONS, { token: LOCK_ENGINE_SEAM, optional: true }],
      useFactory: (options: ResolvedLockOptions, seam?: EngineSeam) => new LockEngine(options, seam),
    },
    {
      provide: LockInspector,
      inject: [LockEngine],
      useFactory: (engine: LockEngine) => new LockInspector(engine),
    },
    LockService,
    FairLockService,
    ReadWriteLockService,
    SemaphoreService,
    LockExplorer,
    { provide: APP_FILTER, useClass: LockErrorFilter },
    { provide: APP_INTERCEPTOR, useClass: LockRequestInterceptor },
  ],
  exports: [LockService, FairLockService, ReadWriteLockService, SemaphoreService],
})
export class LockModule extends ConfigurableLockModule {
  /**
   * Registers the module (global unless `isGlobal: false`). Every option has a default: with none,
   * it connects to `redis://127.0.0.1:6379`.
   */
  static forRoot(options: typeof LOCK_MODULE_OPTIONS_TYPE = {}): DynamicModule {
    return super.forRoot(options);
  }
}
