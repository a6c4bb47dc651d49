// The run context is the owner context's notion (runtime/), re-exported here with the other lock types.
export type { LockRunContext } from '../runtime/run-context';

/** Options of `lock()`. */
export interface LockOptions {
  /**
   * Lease in ms: the lock expires by itself and is never renewed. Omit it to let the watchdog renew.
   * Whole milliseconds: a fraction is rounded up.
   */
  leaseTime?: number;
  /**
   * Cancels the wait: once aborted, the pending acquisition rejects at once with the signal's
   * reason and leaves no waiter, subscription or fair-line place behind. No effect once acquired.
   */
  signal?: AbortSignal;
  /**
   * The `lock.key_template` attribute of this acquisition's metrics and span (e.g. `'order:#id'`);
   * the concrete name is never recorded unless the module's `telemetryLockNames` option says so.
   */
  metricName?: string;
}

/** Options of `tryLock()`. */
export interface TryLockOptions extends LockOptions {
  /** How long to wait for the lock, in ms (a fraction is rounded up). Default 0: one attempt. */
  waitTime?: number;
}

/**
 * How `run` and the decorators treat work that must happen once rather than wait its turn (a job
 * every replica schedules, a queue consumer): skip when someone else has the lock, and keep the lock
 * a little after a fast body so a replica that runs late skips too.
 */
export interface RunPolicy {
  /**
   * When the lock is not acquired within `waitTime` (default 0 with this option), the body does not
   * run and the call resolves `undefined` instead of throwing `LockTimeoutError`; logged at debug
   * level, counted as `lock.outcome` = `skipped`. A call that meets the module's shutdown resolves
   * `undefined` too (a job's tick fired while the app closes). Redis being unreachable still rejects
   * with `LockUnavailableError`.
   */
  skipIfLocked?: boolean;
  /**
   * Ms after the acquisition during which the lock stays held, even when the body finished sooner:
   * the release leaves the rest as the lock's expiry in Redis (no timer in the process, and a crash
   * right after frees it by then too). Must not exceed `leaseTime`.
   */
  minHoldTime?: number;
}

/** Options of `run()` and the decorators. */
export interface RunOptions extends LockOptions, RunPolicy {
  /** How long to wait for the lock, in ms. Default: the module's `defaultWaitTime` (0 with `skipIfLocked`). */
  waitTime?: number;
}

/** `run()` options that skip a busy lock: the call then resolves `undefined` instead of the body's result. */
export type SkippingRunOptions = RunOptions & {
  /** Skip when the lock is busy. */
  skipIfLocked: true;
};

/** `run()` options that wait (and throw `LockTimeoutError`) rather than skip: the call resolves the body's result. */
export type WaitingRunOptions = RunOptions & {
  /** Wait, never skip. */
  skipIfLocked?: false;
};

/** Options of `forceUnlock()`. */
export interface ForceUnlockOptions {
  /**
   * Release only while the hold with this fencing token (as `inspect()` showed it, or its holder's
   * `getFencingToken()`) still holds the lock, so an operator never releases a hold that began
   * after they looked. Resolves false, changing nothing, when the lock is free or held with
   * another token (or, for a write lock, when the writer's lease has ended). A read lock and a
   * multi-lock have no single token: they reject with a `TypeError`. Omitted: release whoever
   * holds it.
   */
  fencingToken?: number;
}

/** A distributed lock, whatever its kind. */
export interface Lock {
  /** The lock's name (for a multi-lock, the member names joined with commas). */
  readonly name: string;
  /**
   * Waits without limit.
   * @throws {@link LockDeadlockError} (rejects) the wait closed a deadlock cycle and was the one refused.
   * @throws {@link LockUnavailableError} (rejects) Redis could not be asked.
   * @throws {@link LockShutdownError} (rejects) the module shut down while it waited.
   */
  lock(options?: LockOptions): Promise<void>;
  /**
   * Resolves true when acquired within `waitTime`, false otherwise.
   * @throws {@link LockDeadlockError} (rejects) the wait closed a deadlock cycle and was the one refused.
   * @throws {@link LockUnavailableError} (rejects) Redis could not be asked.
   */
  tryLock(options?: TryLockOptions): Promise<boolean>;
  /**
   * Releases one hold; rejects with `LockNotHeldError` when the current owner holds none.
   * @throws {@link LockNotHeldError} (rejects) the current owner holds no hold of it.
   * @throws {@link LockUnavailableError} (rejects) Redis could not be asked.
   */
  unlock(): Promise<void>;
  /**
   * Deletes the lock whoever holds it (with `fencingToken`: only while the hold with that token
   * holds it); resolves true when it released one. Its waiters in line get it in order, as after
   * an unlock; the holder learns it lost the lock at its next renewal.
   * @throws `TypeError` (rejects) `fencingToken` is not a positive whole number, or the lock
   * (a read lock, a multi-lock) has no single token to compare.
   * @throws {@link LockUnavailableError} (rejects) Redis could not be asked.
   */
  forceUnlock(options?: ForceUnlockOptions): Promise<boolean>;
  /** True when anyone holds the lock (one round trip). */
  isLocked(): Promise<boolean>;
  /** True when the current owner holds the lock. */
  isHeldByCurrentOwner(): Promise<boolean>;
  /** How many times the current owner holds the lock (re-entries); 0 when it does not hold it. */
  getHoldCount(): Promise<number>;
  /** Remaining lease in ms; -2 when free. */
  remainTimeToLive(): Promise<number>;
  /**
   * The fencing token of the current owner's hold, known locally (no round trip): strictly greater
   * than every token handed out before for this name. `undefined` when not held, for a read lock,
   * and for a multi-lock (see its `getFencingTokens()`).
   */
  getFencingToken(): number | undefined;
}
