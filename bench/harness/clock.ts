/**
 * Milliseconds on CLOCK_MONOTONIC. Linux keeps one such clock for the whole machine, so stamps taken
 * in different processes of the bench compare directly (release in one process, acquire in another).
 */
export function now(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
