/**
 * Redisson's key and channel names, built from the mapped lock name `n` exactly as Redisson's
 * `prefixName` / `suffixName` build them (docs/redisson-interop.md#keys): braces are added around `n`
 * only when it has no `{` of its own, so every derived key lands in the slot of the bare key `n`.
 */
export function prefixName(prefix: string, n: string): string {
  return n.includes('{') ? `${prefix}:${n}` : `${prefix}:{${n}}`;
}

export function suffixName(n: string, suffix: string): string {
  return n.includes('{') ? `${n}:${suffix}` : `{${n}}:${suffix}`;
}

/** The start of this library's semaphore markers, `nestjs_redis_locks_permits:{N}` (a name shaped so is refused). */
export const PERMIT_MARKER_PREFIX = 'nestjs_redis_locks_permits:';

export const RedissonNames = {
  /** RLock / RFairLock / RFencedLock wake channel: message `0`. */
  lockChannel: (n: string): string => prefixName('redisson_lock__channel', n),
  /** An unlock call's idempotency latch (32 lowercase hex id). */
  unlockLatch: (n: string, id: string): string => `${prefixName('redisson_unlock_latch', n)}:${id}`,
  /** RFencedLock's token counter (no TTL). */
  fenceToken: (n: string): string => prefixName('redisson_lock_token', n),
  /** RFairLock's queue (list of owners) and deadlines (zset owner -> epoch ms, client clock). */
  fairQueue: (n: string): string => prefixName('redisson_lock_queue', n),
  fairTimeouts: (n: string): string => prefixName('redisson_lock_timeout', n),
  /** RFairLock's per-waiter channel. */
  fairWaiterChannel: (n: string, owner: string): string => `${prefixName('redisson_lock__channel', n)}:${owner}`,
  /** RReadWriteLock's channel: `0` after a read unlock, `1` after a write unlock. */
  readWriteChannel: (n: string): string => prefixName('redisson_rwlock', n),
  /** A reader's per-hold timeout keys are `<this>:<k>`, k = 1..count. */
  readTimeoutPrefix: (n: string, owner: string): string => `${suffixName(n, owner)}:rwlock_timeout`,
  /** The prefix a read unlock rebuilds other readers' timeout keys from: `{n}`, or `n` when it has a brace. */
  readKeyPrefix: (n: string): string => (n.includes('{') ? n : `{${n}}`),
  /** RSemaphore / RPermitExpirableSemaphore channel: the new permit count. */
  semaphoreChannel: (n: string): string => prefixName('redisson_sc', n),
  /** RPermitExpirableSemaphore's leases: zset of 16 raw bytes -> deadline epoch ms. */
  semaphoreTimeouts: (n: string): string => suffixName(n, 'timeout'),
  /**
   * Ours, not Redisson's: marks `n` as a permit counter this layout created or took over, so that an
   * application's number at `n` is never taken for one (docs/redisson-interop.md#semaphores). No TTL.
   */
  permitMarker: (n: string): string => prefixName(PERMIT_MARKER_PREFIX.slice(0, -1), n),
} as const;

/** A writer's field in a read-write lock's hash. */
export const writerField = (owner: string): string => `${owner}:write`;

/** Redisson's message on a lock channel after an unlock (wakes one waiter per JVM). */
export const REDISSON_UNLOCK_MESSAGE = '0';
/** Redisson's message after a write unlock (wakes every waiter). */
export const REDISSON_READ_UNLOCK_MESSAGE = '1';
