import { INVALID_LOCK_NAME, INVALID_PERMITS, INVALID_TIME } from './lock.messages';

/** Throws a `TypeError` naming the value unless `name` is a non-empty string. */
export function checkLockName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) throw new TypeError(INVALID_LOCK_NAME(name));
}

/**
 * Throws a `RangeError` naming `what` unless `value` is undefined or a number of milliseconds >= 0
 * (finite unless `allowInfinity`: waiting forever is a choice, holding forever is not).
 */
export function checkTime(what: string, value: number | undefined, allowInfinity: boolean): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0 || (!allowInfinity && !Number.isFinite(value))) {
    throw new RangeError(INVALID_TIME(what, value));
  }
}

/**
 * The times of one acquisition: `waitMs` a number of milliseconds >= 0 (Infinity: no limit),
 * `leaseTime` omitted (the watchdog renews) or a finite number > 0 (a lease of 0 would end at once).
 */
export function checkAcquireTimes(waitMs: number, leaseTime: number | undefined): void {
  checkTime('waitTime', waitMs, true);
  checkTime('leaseTime', leaseTime, false);
  if (leaseTime === 0) throw new RangeError(INVALID_TIME('leaseTime (> 0)', leaseTime));
}

/** Throws a `RangeError` naming the value unless `permits` is a whole number >= 1. */
export function checkPermits(permits: unknown): asserts permits is number {
  if (typeof permits !== 'number' || !Number.isInteger(permits) || permits < 1) {
    throw new RangeError(INVALID_PERMITS(permits));
  }
}
