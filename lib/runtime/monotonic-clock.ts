/**
 * Milliseconds on a monotonic clock: for every lease, deadline and timeout. A wall-clock step (NTP,
 * an operator, a VM resumed) must neither stretch a timeout nor end a live hold, so `Date.now()` is
 * kept for timestamps shown to people. Fake timers (Jest, node:test) move this clock too.
 */
export const monotonicNow = (): number => performance.now();
