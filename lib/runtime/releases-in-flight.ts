/**
 * The releases `run` and the decorators sent without waiting for Redis's answer (a locked call
 * resolves as soon as its body settles: see `docs/architecture.md#one-round-trip`). Shutdown waits
 * for them, so a process that exits right after a locked call leaves nothing held. A count and
 * one drain promise rather than a set of promises: nothing is allocated per release.
 */
export class ReleasesInFlight {
  private count = 0;
  private drained: (() => void) | undefined;
  private draining: Promise<void> | undefined;

  get size(): number {
    return this.count;
  }

  /** Counts `release` (which never rejects) until it settles. */
  track(release: Promise<void>): void {
    this.count += 1;
    release.then(this.settled);
  }

  /** Resolves once every release in flight settled, or after `timeoutMs`, whichever is first. */
  settle(timeoutMs: number): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    this.draining ??= new Promise<void>((resolve) => (this.drained = resolve));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    return Promise.race([this.draining, timeout]).finally(() => clearTimeout(timer));
  }

  private readonly settled = (): void => {
    this.count -= 1;
    if (this.count > 0 || !this.drained) return;
    const drained = this.drained;
    this.drained = this.draining = undefined;
    drained();
  };
}
