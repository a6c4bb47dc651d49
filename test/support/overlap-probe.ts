import { deferred } from './lock-app';

/**
 * Counts how many calls are inside a critical section per key, and keeps each one inside until the
 * test lets it go, so exclusion and overlap are observed rather than hoped for.
 */
export class OverlapProbe {
  private readonly insideByKey = new Map<string, number>();
  private readonly maxByKey = new Map<string, number>();
  /** Every call that entered, in order, with the function that lets it leave. */
  readonly entered: Array<{ key: string; leave: () => void }> = [];
  /** When false, calls leave at once. */
  holding = true;

  async enter<T>(key: string, result?: T): Promise<T | undefined> {
    const now = (this.insideByKey.get(key) ?? 0) + 1;
    this.insideByKey.set(key, now);
    this.maxByKey.set(key, Math.max(now, this.maxByKey.get(key) ?? 0));
    const gate = deferred();
    this.entered.push({ key, leave: () => gate.resolve() });
    try {
      if (this.holding) await gate.promise;
      return result;
    } finally {
      this.insideByKey.set(key, (this.insideByKey.get(key) ?? 1) - 1);
    }
  }

  inside(key: string): number {
    return this.insideByKey.get(key) ?? 0;
  }

  maxInside(key: string): number {
    return this.maxByKey.get(key) ?? 0;
  }

  /** Lets the `index`-th call that entered leave. */
  leave(index: number): void {
    this.entered[index].leave();
  }

  reset(): void {
    this.insideByKey.clear();
    this.maxByKey.clear();
    this.entered.length = 0;
    this.holding = true;
  }
}
