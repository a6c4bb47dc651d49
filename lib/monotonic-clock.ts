/**
 * Milliseconds on a monotonic clock: for every lease, deadline and timeout. A wall-clock step (NTP,
 * an operator, a VM resumed) must neither stretch a timeout nor end a live hold, so `Date.now()` is
 * kept for timestamps shown to people.
 *
 * Fake timers move this clock too. Jest's modern fake timers replace `performance`, so reading it at
 * each call follows them. node:test's `mock.timers` replace `Date` but leave `performance` real: then
 * the clock follows the fake `Date`, or the testing kit's leases and waits would take real time. A
 * `jest.spyOn(Date, 'now')` (a simulated wall-clock step) replaces no constructor and is ignored.
 * When the source changes (fake timers installed or removed) the clock continues from its last value
 * instead of jumping, and it never goes back.
 */
const nativeDate = globalThis.Date;
const nativePerformanceNow = globalThis.performance.now;

/** Whether only `Date` is faked (node:test's mock timers): time then moves through `Date` alone. */
function onlyDateFaked(): boolean {
  return globalThis.Date !== nativeDate && globalThis.performance.now === nativePerformanceNow;
}

let source: unknown = nativePerformanceNow;
let last = globalThis.performance.now();
let offset = 0;

export function monotonicNow(): number {
  const dateSource = onlyDateFaked();
  const current = dateSource ? globalThis.Date : globalThis.performance.now;
  const reading = dateSource ? globalThis.Date.now() : globalThis.performance.now();
  if (current !== source) {
    source = current;
    offset = last - reading;
  }
  const value = reading + offset;
  if (value > last) last = value;
  return last;
}
