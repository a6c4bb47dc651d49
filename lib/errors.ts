import {
  LOCK_NOT_ACQUIRED,
  LOCK_NOT_HELD,
  LOCK_UNAVAILABLE,
  LOCK_UPGRADE_DEADLOCK,
  LOCK_WAS_LOST,
  LOST_RENEWAL_FOUND_GONE,
  MODULE_SHUTTING_DOWN,
  NO_ANSWER,
} from './lock.messages';

/** Base class of every error the library throws on purpose. */
export class LockError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * What a GraphQL server answers for a lock error: graphql-js copies an error's own `extensions`
 * into the GraphQL error it makes of it, and Apollo and Mercurius keep a `code` found there instead
 * of INTERNAL_SERVER_ERROR.
 */
export interface LockErrorExtensions {
  readonly code: 'LOCKED' | 'SERVICE_UNAVAILABLE';
  readonly statusCode: 423 | 503;
  readonly lockName: string | readonly string[];
}

/**
 * The lock was not acquired within `waitTime`. `statusCode` 423 lets Nest's HTTP layer answer
 * 423 Locked instead of 500 even without the library's exception filter; `extensions` carries the
 * code `LOCKED` to GraphQL clients.
 */
export class LockTimeoutError extends LockError {
  readonly statusCode = 423;
  readonly extensions: LockErrorExtensions;
  constructor(
    readonly lockName: string | readonly string[],
    readonly waitTime: number,
  ) {
    super(LOCK_NOT_ACQUIRED(lockName, waitTime));
    this.extensions = { code: 'LOCKED', statusCode: 423, lockName };
  }
}

/** `unlock()` by an owner that does not hold the lock (never held it, released it, or lost it). */
export class LockNotHeldError extends LockError {
  constructor(readonly lockName: string) {
    super(LOCK_NOT_HELD(lockName));
  }
}

/** The lock was lost while held: its renewal found it gone (expired, force-unlocked, failover). */
export class LockLostError extends LockError {
  constructor(
    readonly lockName: string,
    reason = LOST_RENEWAL_FOUND_GONE,
  ) {
    super(LOCK_WAS_LOST(lockName, reason));
  }
}

/** A key template that cannot be used: unknown parameter at bootstrap, or an unusable value at call time. */
export class KeyTemplateError extends LockError {}

/** A write lock asked by an owner that holds only the read lock of the same name: a certain deadlock. */
export class LockUpgradeError extends LockError {
  constructor(readonly lockName: string) {
    super(LOCK_UPGRADE_DEADLOCK(lockName));
  }
}

/**
 * Redis could not be asked: unreachable, not answering within `commandTimeout`, or answering with an
 * error (READONLY, LOADING, CLUSTERDOWN, OOM, ...). Not contention: `cause` holds the Redis error.
 * `statusCode` 503 lets Nest's HTTP layer answer 503 even without the library's exception filter;
 * `extensions` carries the code `SERVICE_UNAVAILABLE` to GraphQL clients.
 */
export class LockUnavailableError extends LockError {
  readonly statusCode = 503;
  readonly extensions: LockErrorExtensions;
  constructor(
    readonly lockName: string | readonly string[],
    cause: unknown,
    /** Whole seconds after which a retry makes sense (the HTTP filter's `Retry-After`). */
    readonly retryAfter = 1,
  ) {
    super(LOCK_UNAVAILABLE(lockName, cause instanceof Error ? cause.message : String(cause), cause instanceof NoAnswerError), { cause });
    this.extensions = { code: 'SERVICE_UNAVAILABLE', statusCode: 503, lockName };
  }
}

/**
 * Internal: the `cause` of a `LockUnavailableError` (or the rejection of a bounded call) when Redis
 * did not answer within `timeoutMs`: no Redis error exists to show, and the type says so.
 */
export class NoAnswerError extends Error {
  constructor(readonly timeoutMs: number) {
    super(NO_ANSWER(timeoutMs));
    this.name = 'NoAnswerError';
  }
}

/** A wait interrupted because the LockModule is shutting down. */
export class LockShutdownError extends LockError {
  constructor(readonly lockName?: string) {
    super(MODULE_SHUTTING_DOWN(lockName));
  }
}
