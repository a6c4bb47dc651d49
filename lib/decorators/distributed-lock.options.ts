/** Which lock a decorated method takes. */
export type LockMode = 'reentrant' | 'fair' | 'read' | 'write';

export const LOCK_MODES: readonly LockMode[] = ['reentrant', 'fair', 'read', 'write'];

/**
 * The lock key of a decorated method: a key template (`'order:#id'`, see the README's key templates), several templates
 * (locked together as one multi-lock), or a function of the call's arguments returning one key or
 * several.
 */
export type LockKey = string | readonly string[] | ((...args: any[]) => string | readonly string[]);

/** Options of `@DistributedLock`. */
export interface DistributedLockOptions {
  /** Default `'reentrant'`. */
  mode?: LockMode;
  /** How long to wait for the lock, in ms (then `LockTimeoutError`, 423 in HTTP). Default: the module's `defaultWaitTime`. */
  waitTime?: number;
  /** Lease in ms: the lock expires by itself and is never renewed. Omit it to let the watchdog renew. */
  leaseTime?: number;
}

/** Options of the sugar decorators, whose mode is in their name. */
export type ModeLockOptions = Omit<DistributedLockOptions, 'mode'>;
