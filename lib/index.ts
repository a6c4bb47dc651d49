export { LockModule } from './lock.module';
export { LOCK_MODULE_OPTIONS } from './lock.module-definition';
export type { LockModuleOptions, RedLockOptions, RedisConnectionOption } from './lock.options';
export { LockService } from './lock.service';
export type { Lock, LockOptions, TryLockOptions, RunOptions, LockRunContext } from './locks/lock';
export {
  LockError,
  LockTimeoutError,
  LockNotHeldError,
  LockLostError,
  KeyTemplateError,
  LockUpgradeError,
  LockShutdownError,
} from './errors';
