import { InvalidLockNameError, LockNameTooLongError } from './errors';
import { FORCE_RELEASE_BAD_TOKEN, INVALID_PERMITS, INVALID_TIME } from './lock.messages';

/**
 * Throws an `InvalidLockNameError` (a `TypeError`, answered 400) naming the value unless `name` is a
 * non-empty string, and a
 * `LockNameTooLongError` (the limit and the length, not the name) when it is longer than `maxLength`.
 */
export function checkLockName(name: unknown, maxLength = Number.POSITIVE_INFINITY): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) throw new InvalidLockNameError(name);
  if (name.length > maxLength) throw new LockNameTooLongError(name.length, maxLength);
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
 * A duration given to one call, in whole milliseconds: a fraction is rounded up (1500.5 -> 1501),
 * since Redis takes whole milliseconds (a PEXPIRE refusing 1500.5 after the hold was written would
 * leave a key without a TTL). Up, so a lease or a wait is never shorter than asked. Infinity stays.
 * Module and decorator options are refused instead (`lock.options.ts`, `decorators/`): they are
 * written once, and a fraction there is a typo worth hearing about at bootstrap.
 */
export const wholeMs = (ms: number): number => Math.ceil(ms);

/** The times of one acquisition, checked (`checkAcquireTimes`) and in whole milliseconds. */
export interface AcquireTimes {
  readonly waitMs: number;
  readonly leaseTime: number | undefined;
}

/**
 * Checks the times of one acquisition (`waitMs` a number of milliseconds >= 0, Infinity: no limit;
 * `leaseTime` omitted, the watchdog renews, or a finite number > 0: a lease of 0 would end at once)
 * and answers them in whole milliseconds, rounded up: use the answer, not the values given.
 */
export function checkAcquireTimes(waitMs: number, leaseTime: number | undefined): AcquireTimes {
  checkTime('waitTime', waitMs, true);
  checkTime('leaseTime', leaseTime, false);
  if (leaseTime === 0) throw new RangeError(INVALID_TIME('leaseTime (> 0)', leaseTime));
  return { waitMs: wholeMs(waitMs), leaseTime: leaseTime === undefined ? undefined : wholeMs(leaseTime) };
}

/** Throws a `RangeError` naming the value unless `permits` is a whole number >= 1. */
export function checkPermits(permits: unknown): asserts permits is number {
  if (typeof permits !== 'number' || !Number.isInteger(permits) || permits < 1) {
    throw new RangeError(INVALID_PERMITS(permits));
  }
}

/**
 * The fencing token a conditional force release compares, as the scripts store it (decimal text);
 * '' when `token` is undefined (release whoever holds it). A token is a positive safe integer.
 */
export function forceReleaseToken(call: string, token: unknown): string {
  if (token === undefined) return '';
  if (typeof token !== 'number' || !Number.isSafeInteger(token) || token < 1) throw new TypeError(FORCE_RELEASE_BAD_TOKEN(call, token));
  return String(token);
}
