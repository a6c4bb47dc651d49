/**
 * Sizes of every workload. `full` is what `npm run bench` runs (about 9 minutes on 2 cores, plus
 * about 4 for the Redisson-layout rows, Java Redisson's JVMs included); BENCH_QUICK=1 selects `quick`, for trying the harness out.
 */
export interface BenchSettings {
  readonly repetitions: number;
  readonly w1: { ops: number; warmup: number };
  readonly w2: { tasks: number; warmupMs: number; durationMs: number };
  readonly w3: { processes: number; tasks: number; durationMs: number };
  readonly w4: { handoffs: number; holdMs: number; holdJitterMs: number };
  readonly w5: { waiters: number; settleMs: number; capMs: number };
  /** W5 at scale (this library only: a poller's 20,000 waiters would poll Redis 2 million times a second). */
  readonly w5x: { waiters: number; settleMs: number; capMs: number };
  readonly roundTrips: { calls: number };
  readonly wake: { messages: number; gapMs: number; gapJitterMs: number };
  readonly cliLatencySeconds: number;
  /**
   * The Java Redisson rows (adapters/redisson-java.ts): before anything is timed, each JVM makes
   * uncontended calls until its JIT compiler has been quiet for `jitQuietMs` (at most `jitMaxMs`),
   * and W4 runs `warmupHandoffs` hand-offs more, left out (the first waits load the wait path).
   */
  readonly jvm: { jitQuietMs: number; jitMaxMs: number; warmupHandoffs: number };
}

export const FULL: BenchSettings = {
  repetitions: 3,
  // W1 measures the steady state a busy service sees: 2000 calls after 500 of warm-up (0.3 s) were
  // less than V8 needs to optimise a library's whole call path, so a deeper path measured partly
  // its JIT warm-up (this library's `run`, Node 24, one afternoon: 7,816 ops/s there, 8,893 here).
  w1: { ops: 20_000, warmup: 5000 },
  w2: { tasks: 64, warmupMs: 300, durationMs: 2000 },
  w3: { processes: 4, tasks: 8, durationMs: 3000 },
  w4: { handoffs: 200, holdMs: 10, holdJitterMs: 10 },
  w5: { waiters: 1000, settleMs: 500, capMs: 10_000 },
  w5x: { waiters: 20_000, settleMs: 2000, capMs: 60_000 },
  roundTrips: { calls: 3000 },
  wake: { messages: 200, gapMs: 10, gapJitterMs: 10 },
  cliLatencySeconds: 2,
  jvm: { jitQuietMs: 1000, jitMaxMs: 30_000, warmupHandoffs: 20 },
};

export const QUICK: BenchSettings = {
  repetitions: 1,
  w1: { ops: 300, warmup: 50 },
  w2: { tasks: 64, warmupMs: 100, durationMs: 300 },
  w3: { processes: 4, tasks: 8, durationMs: 500 },
  w4: { handoffs: 20, holdMs: 10, holdJitterMs: 10 },
  w5: { waiters: 1000, settleMs: 300, capMs: 5_000 },
  w5x: { waiters: 20_000, settleMs: 1000, capMs: 60_000 },
  roundTrips: { calls: 500 },
  wake: { messages: 20, gapMs: 10, gapJitterMs: 10 },
  cliLatencySeconds: 2,
  jvm: { jitQuietMs: 200, jitMaxMs: 2000, warmupHandoffs: 5 },
};

export type WorkloadId = 'w1' | 'w2' | 'w3' | 'w4' | 'w5' | 'w5x';
export const WORKLOADS: readonly WorkloadId[] = ['w1', 'w2', 'w3', 'w4', 'w5', 'w5x'];
/** Workloads only this library's adapters run. */
export const OURS_ONLY: readonly WorkloadId[] = ['w5x'];

/** A worker that has not answered by then is killed and its run reported as failed. */
export const JOB_TIMEOUT_MS = 90_000;

/**
 * A workload run that took longer than this (a slow poller's 200 W4 hand-offs, a W5 that hit its
 * cap) is not repeated: its one run has plenty of samples, and repeating it would blow the budget.
 */
export const REPEAT_ONLY_UNDER_MS = 10_000;
