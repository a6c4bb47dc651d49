import type { LockUnavailableError } from '../../errors';

/**
 * Pause after the n-th attempt in a row that could not reach Redis, or that found the lock busy
 * with no TTL to wait for (a key left without one): 50 ms doubling up to 1 s.
 */
const backOffMs = (failures: number): number => Math.min(1_000, 50 * 2 ** Math.min(failures - 1, 5));

/**
 * How long a waiter sleeps after a missed attempt (ms, at least 1): until the lock's TTL ends
 * (`outcome` "busy"), at a gentle pace without Redis or without a subscription yet, and never past
 * the deadline (`remainingMs` from now) nor the contender's `maxSleepMs`.
 */
export function sleepAfterMissMs(
  outcome: number | LockUnavailableError | undefined,
  failures: number,
  busyWithoutTtl: number,
  subscribed: boolean,
  remainingMs: number,
  maxSleepMs: number,
): number {
  // A key without a TTL (an operator's PERSIST, a foreign client) answers -1: no end to wait for,
  // so back off (a release still wakes the waiter at once) rather than retry every millisecond.
  let sleepMs =
    typeof outcome !== 'number' ? backOffMs(failures) : busyWithoutTtl > 0 ? backOffMs(busyWithoutTtl) : Math.max(outcome, 1);
  if (!subscribed) sleepMs = Math.min(sleepMs, backOffMs(Math.max(failures, 1)));
  return Math.max(1, Math.min(sleepMs, remainingMs, maxSleepMs));
}
