/** What the bench's processes say to each other over the IPC channel (parent <-> worker). */
export interface Message {
  readonly type: string;
  readonly [field: string]: unknown;
}

/** One piece of work for a fresh worker process. */
export interface Job {
  /** A child task of `workloads/index.ts` (a workload or a floor). */
  readonly task: string;
  /** Adapter id (`adapters/index.ts`); floors have none. */
  readonly adapter?: string;
  readonly redisUrl: string;
  /** This process's part in a multi-process workload (W3 process index, W4/floor role). */
  readonly role?: number;
  /** What a job measures when its task covers several (the cost workload: `case/subject`). */
  readonly variant?: string;
  readonly params: Readonly<Record<string, number>>;
}

export const JOB_ENV = 'BENCH_JOB';
