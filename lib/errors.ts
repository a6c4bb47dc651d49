import {
  INVALID_LOCK_NAME,
  LOCK_DEADLOCK,
  LOCK_NAME_CONFLICT,
  LOCK_NAME_TOO_LONG,
  LOCK_NOT_ACQUIRED,
  LOCK_NOT_HELD,
  REENTRY_HOLD_ENDED,
  LOCK_UNAVAILABLE_PLAIN,
  LOCK_UPGRADE_DEADLOCK,
  LOCK_WAS_LOST,
  LOST_RENEWAL_FOUND_GONE,
  MODULE_SHUTTING_DOWN,
  REDIS_ANSWERED_ERROR,
  REDIS_ERROR_CODE_WORDS,
  REDIS_NO_ANSWER,
  REDIS_UNREACHABLE,
  NO_ANSWER,
  shortName,
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
  /** The GraphQL error code: `LOCKED` (423), `SERVICE_UNAVAILABLE` (503) or `CONFLICT` (409, a deadlock). */
  readonly code: 'LOCKED' | 'SERVICE_UNAVAILABLE' | 'CONFLICT';
  /** The HTTP status the same error answers with. */
  readonly statusCode: 409 | 423 | 503;
  /** The name(s), each cut to its first 200 characters (a name may be a request value). */
  readonly lockName: string | readonly string[];
}

/** What a GraphQL server answers for a lock name or key template value it cannot use (400). */
export interface BadLockNameExtensions {
  /** The GraphQL error code of a bad request. */
  readonly code: 'BAD_REQUEST';
  /** The HTTP status the same error answers with. */
  readonly statusCode: 400;
  /** The key template placeholder whose value was unusable (`#id`), when a template built the name. */
  readonly parameter?: string;
}

/** Each name cut to its first 200 characters, as bodies and extensions carry it. */
export function shortLockName(lockName: string | readonly string[]): string | readonly string[] {
  return typeof lockName === 'string' ? shortName(lockName) : lockName.map(shortName);
}

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

/**
 * A key template that cannot be used: unknown parameter at bootstrap, or an unusable value at call
 * time (missing, `null`, an object, too long). At call time the value is the caller's input, so
 * `statusCode` 400 and `extensions.code` `BAD_REQUEST` give it the meaning of a bad request on every
 * transport; `parameter` names the placeholder (`#id`) when one was at fault.
 */
export class KeyTemplateError extends LockError {
  /** 400 Bad Request, the HTTP status Nest answers with for this error. */
  readonly statusCode = 400;
  /** What GraphQL clients receive: the code `BAD_REQUEST`, the status and the placeholder at fault. */
  readonly extensions: BadLockNameExtensions;
  constructor(
    message: string,
    /** The key template placeholder at fault (`#id`), when one was. */
    readonly parameter?: string,
  ) {
    super(message);
    this.extensions = parameter === undefined ? { code: 'BAD_REQUEST', statusCode: 400 } : { code: 'BAD_REQUEST', statusCode: 400, parameter };
  }
}

/**
 * A lock name longer than the module's `maxNameLength`. The message gives the limit and the length,
 * not the name. A bad request (400) on every transport, like an unusable key template value.
 */
export class LockNameTooLongError extends LockError {
  /** 400 Bad Request, the HTTP status Nest answers with for this error. */
  readonly statusCode = 400;
  /** What GraphQL clients receive: the code `BAD_REQUEST` and the status. */
  readonly extensions: BadLockNameExtensions = { code: 'BAD_REQUEST', statusCode: 400 };
  constructor(
    /** The length of the refused name. */
    readonly nameLength: number,
    /** The module's `maxNameLength`. */
    readonly maxNameLength: number,
  ) {
    super(LOCK_NAME_TOO_LONG(nameLength, maxNameLength));
  }
}

/**
 * A lock name that is not a non-empty string (`getLock('')`, `run('')`, `inspect('')`, a multi-lock
 * member, ...). A bad request (400) on every transport, like `LockNameTooLongError`. It extends
 * `TypeError`, not `LockError`: an empty name was refused with a plain `TypeError` before, and code
 * catching `TypeError` keeps working (a class cannot extend both).
 */
export class InvalidLockNameError extends TypeError {
  /** 400 Bad Request, the HTTP status Nest answers with for this error. */
  readonly statusCode = 400;
  /** What GraphQL clients receive: the code `BAD_REQUEST` and the status. */
  readonly extensions: BadLockNameExtensions = { code: 'BAD_REQUEST', statusCode: 400 };
  constructor(
    value: unknown,
    /** Why a non-empty name is refused (a layout's rule); by default: not a non-empty string. */
    message?: string,
  ) {
    super(message ?? INVALID_LOCK_NAME(value));
    this.name = 'InvalidLockNameError';
  }
}

/**
 * A `list({ match })` pattern refused before Redis is asked: invalid (`[z-a]`, an unclosed `[`) or too
 * costly (too many wildcards, too long); the message says why. A bad request (400) on every transport
 * (`match` is a request value in admin endpoints). It extends `TypeError`, as the refusal was documented
 * to be (`error instanceof TypeError` keeps working), not `LockError`.
 */
export class LockNamePatternError extends TypeError {
  /** 400 Bad Request, the HTTP status Nest answers with for this error. */
  readonly statusCode = 400;
  /** What GraphQL clients receive: the code `BAD_REQUEST` and the status. */
  readonly extensions: BadLockNameExtensions = { code: 'BAD_REQUEST', statusCode: 400 };
  constructor(message: string) {
    super(message);
    this.name = 'LockNamePatternError';
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

/** Where a deadlock's owner runs, when known: its module instance's host, pid and client name. */
export interface DeadlockInstance {
  /** The host name of the owner's process. */
  readonly host: string;
  /** The process id of the owner's process. */
  readonly pid: number;
  /** The `clientName` of the owner's module, when it has one. */
  readonly clientName?: string;
}

/**
 * One step of a deadlock's cycle: the call chain before it waits for `lock`, held by `owner` (or,
 * with `inLine`, behind `owner`'s wait in the lock's line, which cannot be passed).
 */
export interface DeadlockStep {
  /** The lock's name. */
  readonly lock: string;
  /** The owner id (`clientId:n`) waited for. */
  readonly owner: string;
  /** True when `owner` does not hold `lock` but waits ahead in its line. */
  readonly inLine?: boolean;
  /** Where `owner` runs, when known. */
  readonly instance?: DeadlockInstance;
}

/**
 * A wait that could never end: this call chain waits for a lock whose holder's call chain waits,
 * step by step, for a lock this chain holds. One wait per cycle is refused (the youngest: the one
 * that closed the cycle, see docs/deadlocks.md) and the others go on. `cycle` lists the steps in
 * order, starting with the refused wait's; the last step's owner is in the refused call chain.
 * `statusCode` 409 lets Nest's HTTP layer answer 409 Conflict; `extensions` carries `CONFLICT`.
 */
export class LockDeadlockError extends LockError {
  /** 409 Conflict, the HTTP status Nest answers with for this error. */
  readonly statusCode = 409;
  /** What GraphQL clients receive: the code `CONFLICT`, the status and the lock names. */
  readonly extensions: LockErrorExtensions;
  /** The names of the locks of the cycle, in order (a name appears once). */
  readonly lockName: readonly string[];
  constructor(
    /** The steps of the cycle, starting with the refused wait's. */
    readonly cycle: readonly DeadlockStep[],
  ) {
    super(LOCK_DEADLOCK(cycle));
    this.lockName = [...new Set(cycle.map((step) => step.lock))];
    this.extensions = { code: 'CONFLICT', statusCode: 409, lockName: shortLockName(this.lockName) };
  }
}

/**
 * Redis could not be asked: unreachable, not answering within `commandTimeout`, or answering with an
 * error (READONLY, LOADING, CLUSTERDOWN, OOM, ...). Not contention: `cause` holds the Redis error.
 * `statusCode` 503 lets Nest's HTTP layer answer 503 even without the library's exception filter;
 * `extensions` carries the code `SERVICE_UNAVAILABLE` to GraphQL clients.
 */
export class LockUnavailableError extends LockError {
  /** 503 Service Unavailable, the HTTP status Nest answers with for this error. */
  readonly statusCode = 503;
  /** What GraphQL clients receive: the code `SERVICE_UNAVAILABLE`, the status and the lock name(s). */
  readonly extensions: LockErrorExtensions;
  constructor(
    /** The name(s) of the lock the call was about. */
    readonly lockName: string | readonly string[],
    cause: unknown,
    /** Whole seconds after which a retry makes sense (the HTTP filter's `Retry-After`). */
    readonly retryAfter = 1,
  ) {
    super(LOCK_UNAVAILABLE_PLAIN(lockName, redisFailureInWords(cause)), { cause });
    this.extensions = { code: 'SERVICE_UNAVAILABLE', statusCode: 503, lockName: shortLockName(lockName) };
  }
}

/**
 * What a Redis failure means, in plain words, for messages a client may see (HTTP, RPC, WebSocket and
 * GraphQL bodies): never Redis's own error text, a script's hash or line, or a server address. The
 * `cause` keeps those (and the exception filter logs them).
 */
export function redisFailureInWords(cause: unknown): string {
  if (cause instanceof NoAnswerError) return REDIS_NO_ANSWER(cause.timeoutMs);
  // The library's own texts (a RedLock without a majority) are plain words already.
  if (cause instanceof LockError) return cause.message;
  if (cause instanceof Error && cause.name === 'ReplyError') {
    const code = /^[A-Z]+/.exec(cause.message)?.[0];
    return (code !== undefined && REDIS_ERROR_CODE_WORDS[code]) || REDIS_ANSWERED_ERROR;
  }
  return REDIS_UNREACHABLE;
}

/**
 * A key of a lock holds something else than the structure the lock keeps there: an application's
 * string at a lock's name, a hash without a lock's fields, a number that is not a semaphore's permit
 * counter (docs/redisson-interop.md#names). The script refused before writing anything: no
 * application value changed. Not an outage: `statusCode` 409 (Conflict), `extensions.code`
 * `CONFLICT`; answered 409 by the exception filter. Fix: use lock names (a key template's constant
 * prefix) that no other key of this Redis uses.
 */
export class LockNameConflictError extends LockError {
  /** 409 Conflict, the HTTP status Nest answers with for this error. */
  readonly statusCode = 409;
  /** What GraphQL clients receive: the code `CONFLICT`, the status and the lock name(s). */
  readonly extensions: LockErrorExtensions;
  constructor(
    /** The name of the lock the call was about. */
    readonly lockName: string | readonly string[],
    /** The Redis key that holds something else, when known. */
    readonly key: string | undefined,
    /** What it holds, when known: a Redis type (`string`, `hash`, `list`, `set`, `zset`, `stream`). */
    readonly holds: string | undefined,
    /** What the lock keeps there: `lock`, `read-write-lock`, `permit-counter`, `permit-leases`, `fair-queue`, `fair-deadlines`, `fence-token`. */
    readonly expected: string,
    options?: { cause?: unknown },
  ) {
    super(LOCK_NAME_CONFLICT(lockName, key, holds, expected), options);
    this.extensions = { code: 'CONFLICT', statusCode: 409, lockName: shortLockName(lockName) };
  }
}

/** The error reply a script gives for a key that is not its structure: `LOCKNAMECONFLICT <holds> <expected> <key>`. */
const CONFLICT_REPLY = /^LOCKNAMECONFLICT (\S+) (\S+) ([\s\S]*)$/;

/**
 * The `LockNameConflictError` a Redis error means, or undefined: a script's own refusal (the layout's
 * scripts check a key's type before writing), or Redis's WRONGTYPE (a command refused on a key of
 * another type; Redis wrote nothing for that command).
 */
export function conflictOf(lockName: string | readonly string[], error: unknown): LockNameConflictError | undefined {
  if (error instanceof LockNameConflictError) return error;
  if (!(error instanceof Error) || error.name !== 'ReplyError') return undefined;
  const refused = CONFLICT_REPLY.exec(error.message);
  if (refused) return new LockNameConflictError(lockName, refused[3], refused[1], refused[2], { cause: error });
  if (error.message.startsWith('WRONGTYPE')) return new LockNameConflictError(lockName, undefined, undefined, 'lock', { cause: error });
  return undefined;
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
  constructor(
    /** The name of the lock whose wait was interrupted, when there was one. */
    readonly lockName?: string,
  ) {
    super(MODULE_SHUTTING_DOWN(lockName));
  }
}
