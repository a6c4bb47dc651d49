/** Which lock a decorated method takes. */
export type LockMode = 'reentrant' | 'fair' | 'read' | 'write';

export const LOCK_MODES: readonly LockMode[] = ['reentrant', 'fair', 'read', 'write'];

/**
 * The lock key of a decorated method: a key template (`'order:#id'`, see docs/decorators-and-key-templates.md#key-templates), several templates
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
  /**
   * Not acquired within `waitTime` (default 0 with this option): the method does not run and its
   * call resolves `undefined`, logged at debug level only (a `@Cron` job every replica schedules).
   * Redis being unreachable still rejects with `LockUnavailableError`. Refused at bootstrap on an
   * HTTP route, an RPC `@MessagePattern` handler and a GraphQL resolver, whose caller would get an
   * empty success: give those `waitTime: 0` (a busy lock answers 423 at once).
   */
  skipIfLocked?: boolean;
  /**
   * Ms after the acquisition the lock stays held even when the method finished sooner (left as the
   * lock's expiry in Redis, no timer), so a replica whose timer runs late skips instead of running
   * the same tick again. Must not exceed `leaseTime`; pick it above the worst clock/timer skew and
   * below the job's interval.
   */
  minHoldTime?: number;
}

/** Options of the sugar decorators, whose mode is in their name. */
export type ModeLockOptions = Omit<DistributedLockOptions, 'mode'>;

/**
 * What `@DistributedLock` and its kin return: a method decorator for methods that return a Promise
 * (a locked method waits for its lock, so it always returns one). A method declared to return
 * anything else (`string`, `void`, an `Observable`) does not compile:
 * `Argument of type 'TypedPropertyDescriptor<(id: string) => string>' is not assignable to ...`.
 * Bootstrap refuses it too, for JavaScript callers.
 *
 * @typeParam T - the decorated method's type, which must return a Promise.
 */
export type LockedMethodDecorator = <T extends (...args: any[]) => Promise<unknown>>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<T>,
) => void;
