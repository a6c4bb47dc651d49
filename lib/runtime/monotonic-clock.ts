/**
 * Milliseconds on a monotonic clock: for every lease, deadline and timeout. A wall-clock step (NTP,
 * an operator, a VM resumed) must neither stretch a timeout nor end a live hold, so `Date.now()` is
 * kept for timestamps shown to people. Fake timers (Jest, node:test) move this clock too.
 */
let read = (): number => performance.now();

export const monotonicNow = (): number => read();

/**
 * The testing kit's clock: `Date.now()`, never going back. node:test's mock timers move `Date` with
 * the timers but not `performance`, and the kit's leases and waits must follow whichever fake timers
 * a test uses. Process-wide: a process that loads the kit tests with it.
 */
export function useTimersClock(): void {
  let last = Number.NEGATIVE_INFINITY;
  read = () => (last = Math.max(last, Date.now()));
}
