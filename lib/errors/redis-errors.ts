import { LOCK_NAME_CONFLICT, LOCK_UNAVAILABLE_PLAIN, REDIS_ANSWERED_ERROR, REDIS_ERROR_CODE_WORDS, REDIS_NO_ANSWER, REDIS_UNREACHABLE, NO_ANSWER } from '../lock.messages';
import { LockError, shortLockName, type LockErrorExtensions } from './lock-error';

/** Redis could not be asked, or a lock's key holds something else; Redis failures in plain words. */

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
