/** Base class of every error the library throws on purpose. */
export class LockError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Names a lock in messages: one name or the names of a multi-lock. */
function describe(lockName: string | readonly string[]): string {
  return Array.isArray(lockName) ? `[${lockName.map((n) => `"${n}"`).join(', ')}]` : `"${lockName}"`;
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
    super(`Lock ${describe(lockName)} was not acquired within ${waitTime} ms`);
    this.extensions = { code: 'LOCKED', statusCode: 423, lockName };
  }
}

/** `unlock()` by an owner that does not hold the lock (never held it, released it, or lost it). */
export class LockNotHeldError extends LockError {
  constructor(readonly lockName: string) {
    super(`Lock "${lockName}" is not held by the current owner`);
  }
}

/** The lock was lost while held: its renewal found it gone (expired, force-unlocked, failover). */
export class LockLostError extends LockError {
  constructor(
    readonly lockName: string,
    reason = 'renewal found it no longer held',
  ) {
    super(`Lock "${lockName}" was lost: ${reason}`);
  }
}

/** A key template that cannot be used: unknown parameter at bootstrap, or an unusable value at call time. */
export class KeyTemplateError extends LockError {}

/** A write lock asked by an owner that holds only the read lock of the same name: a certain deadlock. */
export class LockUpgradeError extends LockError {
  constructor(readonly lockName: string) {
    super(
      `Write lock "${lockName}" was requested while holding only its read lock; ` +
        'upgrading would deadlock: release the read lock first',
    );
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
    super(`Lock ${describe(lockName)} is unavailable: Redis ${causeText(cause)}`, { cause });
    this.extensions = { code: 'SERVICE_UNAVAILABLE', statusCode: 503, lockName };
  }
}

function causeText(cause: unknown): string {
  const message = cause instanceof Error ? cause.message : String(cause);
  return message.startsWith('no answer') ? `gave ${message}` : `failed: ${message}`;
}

/** A wait interrupted because the LockModule is shutting down. */
export class LockShutdownError extends LockError {
  constructor(readonly lockName?: string) {
    super(lockName ? `LockModule is shutting down: wait for "${lockName}" cancelled` : 'LockModule is shutting down');
  }
}
