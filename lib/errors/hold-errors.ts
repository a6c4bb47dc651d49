import { LOCK_NOT_ACQUIRED, LOCK_NOT_HELD, REENTRY_HOLD_ENDED, LOCK_UPGRADE_DEADLOCK, LOCK_WAS_LOST, LOST_RENEWAL_FOUND_GONE, MODULE_SHUTTING_DOWN } from '../lock.messages';
import { LockError, shortLockName, type LockErrorExtensions } from './lock-error';

/** Errors of acquiring, holding and releasing a lock: not acquired in time, not held, lost, an upgrade, a shutdown. */

/**
 * The lock was not acquired within `waitTime`. `statusCode` 423 lets Nest's HTTP layer answer
 * 423 Locked instead of 500 even without the library's exception filter; `extensions` carries the
 * code `LOCKED` to GraphQL clients.
 */
export class LockTimeoutError extends LockError {
  /** 423 Locked, the HTTP status Nest answers with for this error. */
  readonly statusCode = 423;
  /** What GraphQL clients receive: the code `LOCKED`, the status and the lock name(s). */
  readonly extensions: LockErrorExtensions;
  constructor(
    /** The name of the lock not acquired (the names, for a multi-lock or RedLock). */
    readonly lockName: string | readonly string[],
    /** How long the acquisition waited (ms) before giving up. */
    readonly waitTime: number,
  ) {
    super(LOCK_NOT_ACQUIRED(lockName, waitTime));
    this.extensions = { code: 'LOCKED', statusCode: 423, lockName: shortLockName(lockName) };
  }
}

/** `unlock()` by an owner that does not hold the lock (never held it, released it, or lost it). */
export class LockNotHeldError extends LockError {
  constructor(
    /** The name of the lock that was not held. */
    readonly lockName: string,
  ) {
    super(LOCK_NOT_HELD(lockName));
  }
}

/**
 * @internal A re-entry-only attempt found that the owner holds nothing any more: the body's hold it
 * would re-enter ended (docs/owners-and-reentry.md#the-owner-model). Never reaches a caller: the
 * lock asked through asks again as an owner of its own.
 */
export class ReentryEndedError extends LockError {
  constructor(readonly lockName: string) {
    super(REENTRY_HOLD_ENDED(lockName));
  }
}

/** The lock was lost while held: its renewal found it gone (expired, force-unlocked, failover). */
export class LockLostError extends LockError {
  constructor(
    /** The name of the lock that was lost. */
    readonly lockName: string,
    reason = LOST_RENEWAL_FOUND_GONE,
  ) {
    super(LOCK_WAS_LOST(lockName, reason));
  }
}

/** A write lock asked by an owner that holds only the read lock of the same name: a certain deadlock. */
export class LockUpgradeError extends LockError {
  constructor(
    /** The name of the lock whose read lock the owner holds. */
    readonly lockName: string,
  ) {
    super(LOCK_UPGRADE_DEADLOCK(lockName));
  }
}

/** A wait interrupted because the LockModule is shutting down. */
export class LockShutdownError extends LockError {
  constructor(
    /** The name of the lock whose wait was interrupted, when there was one. */
    readonly lockName?: string,
  ) {
    super(MODULE_SHUTTING_DOWN(lockName));
  }
}
