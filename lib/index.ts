export { LockModule } from './lock.module';
export { LOCK_MODULE_OPTIONS } from './lock.module-definition';
export type { LockModuleOptions, RedLockOptions, RedisConnectionOption } from './lock.options';
export type { RedissonLayoutOptions, RedissonNameMapper } from './layout.options';
export { LockService } from './lock.service';
export { FairLockService } from './fair-lock.service';
export { ReadWriteLockService } from './read-write-lock.service';
export type { ReadWriteLock } from './locks/read-write-lock';
export { SemaphoreService } from './semaphores/semaphore.service';
export type { Semaphore } from './semaphores/semaphore';
export type { Permit } from './semaphores/permit';
export type { AcquireOptions, SemaphoreOptions, SemaphoreRunOptions, SemaphoreInfo, SemaphoreForceReleaseOptions } from './semaphores/semaphore.options';
export { SemaphoreLimitError } from './semaphores/semaphore-errors';
export { DistributedSemaphore } from './decorators/distributed-semaphore.decorator';
export type { DistributedSemaphoreOptions } from './decorators/semaphore-method';
export type {
  Lock,
  ForceUnlockOptions,
  LockOptions,
  TryLockOptions,
  RunOptions,
  RunPolicy,
  SkippingRunOptions,
  WaitingRunOptions,
  LockRunContext,
} from './locks/lock';
export type { MultiLock } from './locks/multi-lock';
export { DistributedLock, FairLock, ReadLock, WriteLock } from './decorators/distributed-lock.decorator';
export { LockContext } from './decorators/lock-context.decorator';
export type {
  LockInfo,
  LockHolderInfo,
  LockWaiterInfo,
  LockInstanceInfo,
  ListLocksOptions,
  LiveInstanceInfo,
  LiveInstances,
  LiveInstancesOptions,
} from './introspection/lock-info';
export type { LockKind, AcquireOutcome } from './metrics/lock-telemetry';
export type { DistributedLockOptions, LockedMethodDecorator, LockKey, LockMode, ModeLockOptions } from './decorators/distributed-lock.options';
export { LockErrorFilter, lockErrorResponse } from './http/lock-error.filter';
export type { BadLockNameResponseBody, DeadlockResponseBody, LockedResponseBody, LockNameConflictResponseBody, LockUnavailableResponseBody } from './http/lock-error.filter';
export {
  LockError,
  LockTimeoutError,
  LockNotHeldError,
  LockLostError,
  KeyTemplateError,
  LockNameTooLongError,
  InvalidLockNameError,
  LockNamePatternError,
  LockUpgradeError,
  LockDeadlockError,
  LockShutdownError,
  LockUnavailableError,
  LockNameConflictError,
} from './errors';
export type { BadLockNameExtensions, LockErrorExtensions, DeadlockStep, DeadlockInstance } from './errors';
