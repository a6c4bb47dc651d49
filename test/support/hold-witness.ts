import { performance } from 'node:perf_hooks';

/** How a body holds its resources: readers of one read-write lock may share it, nobody else may. */
export type VisitMode = 'exclusive' | 'shared';

/** One body's stay inside one or more locks, on this process's monotonic clock (ms). */
export interface Visit {
  readonly id: number;
  /** The holder: a re-entered body shares its outer body's holder, and a holder never excludes itself. */
  readonly who: string;
  /** What the body holds (e.g. `lock:{a}`): visits exclude each other where their resources meet. */
  readonly resources: readonly string[];
  readonly mode: VisitMode;
  readonly enteredAt: number;
  exitedAt?: number;
  /** When the body's signal aborted (its entry time when it was already aborted then). */
  abortedAt?: number;
  abortReason?: unknown;
}

/**
 * The lock's one promise, checked from outside: records when each body enters and leaves and when
 * its `signal` aborts, and reports every overlap of two holders on one resource where the earlier
 * body's signal had not aborted by the time the later one entered (a second owner got in while the
 * first still believed it held the lock). Shared by every module instance of the process; the clock
 * is `performance.now()`, which no wall-clock step moves.
 */
export class HoldWitness {
  readonly visits: Visit[] = [];
  private seq = 0;
  readonly origin = performance.now();

  now(): number {
    return performance.now();
  }

  enter(who: string, resources: string | readonly string[], signal: AbortSignal, mode: VisitMode = 'exclusive'): Visit {
    const enteredAt = this.now();
    const visit: Visit = { id: ++this.seq, who, resources: typeof resources === 'string' ? [resources] : resources, mode, enteredAt };
    if (signal.aborted) {
      visit.abortedAt = enteredAt;
      visit.abortReason = signal.reason;
    } else {
      signal.addEventListener(
        'abort',
        () => {
          visit.abortedAt = this.now();
          visit.abortReason = signal.reason;
        },
        { once: true },
      );
    }
    this.visits.push(visit);
    return visit;
  }

  exit(visit: Visit): void {
    visit.exitedAt ??= this.now();
  }

  /** Runs `body` as one visit: entered now, left when it settles. */
  async inside<T>(
    who: string,
    resources: string | readonly string[],
    signal: AbortSignal,
    body: (visit: Visit) => T | Promise<T>,
    mode: VisitMode = 'exclusive',
  ): Promise<T> {
    const visit = this.enter(who, resources, signal, mode);
    try {
      return await body(visit);
    } finally {
      this.exit(visit);
    }
  }

  /** Every overlap the promise forbids, one line each (empty when the promise held). */
  violations(): string[] {
    const found: string[] = [];
    const ordered = [...this.visits].sort((a, b) => a.enteredAt - b.enteredAt || a.id - b.id);
    for (let i = 0; i < ordered.length; i++) {
      const earlier = ordered[i];
      for (let j = i + 1; j < ordered.length; j++) {
        const later = ordered[j];
        if (later.who === earlier.who) continue;
        if (earlier.exitedAt !== undefined && later.enteredAt >= earlier.exitedAt) continue;
        if (earlier.mode === 'shared' && later.mode === 'shared') continue;
        const shared = earlier.resources.filter((r) => later.resources.includes(r));
        if (shared.length === 0) continue;
        if (earlier.abortedAt !== undefined && earlier.abortedAt <= later.enteredAt) continue;
        found.push(
          `${later.who} entered ${shared.join(',')} at ${this.at(later.enteredAt)} while ${earlier.who} ` +
            `(in since ${this.at(earlier.enteredAt)}, out ${earlier.exitedAt === undefined ? 'never' : this.at(earlier.exitedAt)}) ` +
            `still had a live signal (aborted ${earlier.abortedAt === undefined ? 'never' : this.at(earlier.abortedAt)})`,
        );
      }
    }
    return found;
  }

  /** A time as ms since the witness started, for messages. */
  at(time: number): string {
    return `+${Math.round(time - this.origin)}ms`;
  }

  reset(): void {
    this.visits.length = 0;
  }
}
