/**
 * Blocks this process's event loop for `ms` (a GC pause or CPU-bound work): no timer fires and no
 * reply is handled meanwhile, though the kernel keeps receiving them.
 */
export function stallEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy: nothing else of this process runs
  }
}

/** Resolves after the current turn's I/O writes went out (the corked socket writes are flushed on nextTick). */
export function afterWritesFlushed(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
