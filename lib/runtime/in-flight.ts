/**
 * Work in flight that shutdown waits for: the releases `run` and the decorators sent without
 * waiting for Redis's answer (a locked call resolves as soon as its body settles: see
 * `docs/architecture.md#one-round-trip`), so a process that exits right after a locked call leaves
 * nothing held; and the bodies running under a lock, which shutdown lets finish (see
 * `docs/architecture.md#shutdown`). A count and one drain promise rather than a set of promises:
 * nothing is allocated per call.
 */
export class InFlight {
  private count = 0;
  private drained: (() => void) | undefined;
  private draining: Promise<void> | undefined;

  get size(): number {
    return this.count;
  }

  /** Counts `work` (which never rejects) until it settles. */
  track(work: Promise<void>): void {
    this.count += 1;
    work.then(this.settled);
  }

  /** Counts one piece of work until `leave`. */
  enter(): void {
    this.count += 1;
  }

  leave(): void {
    this.settled();
  }

  /** Resolves once everything in flight settled, or after `timeoutMs`, whichever is first. */
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
