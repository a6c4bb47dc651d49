import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { LockModuleOptions } from './lock.options';

export const {
  ConfigurableModuleClass: ConfigurableLockModule,
  /** The injection token of the options given to `LockModule.forRoot()` / `forRootAsync()`, as given (not validated). */
  MODULE_OPTIONS_TOKEN: LOCK_MODULE_OPTIONS,
  OPTIONS_TYPE: LOCK_MODULE_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: LOCK_MODULE_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<LockModuleOptions>()
  .setClassMethodName('forRoot')
  // Global by default, as ScheduleModule.forRoot and BullModule.forRoot are: registered once in the
  // root module, LockService is injectable in every feature module. `isGlobal: false` keeps it local.
  .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();

/** Validated options with defaults filled in. */
export const RESOLVED_LOCK_OPTIONS = Symbol('RESOLVED_LOCK_OPTIONS');
