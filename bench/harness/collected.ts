import type { WakeFloor } from '../floors/pubsub-wake';
import type { RoundTripFloor } from '../floors/round-trips';
import type { W1Result } from '../workloads/w1-uncontended';
import type { W2Result } from '../workloads/w2-concurrent';
import type { W3Result } from '../workloads/w3-contended';
import type { W4Result } from '../workloads/w4-handoff';
import type { W5Result } from '../workloads/w5-many-waiters';
import type { NetworkMode } from './network-mode';
import type { Revision } from './revision';
import type { BenchSettings, WorkloadId } from './settings';

export interface WorkloadResults {
  w1: W1Result;
  w2: W2Result;
  w3: W3Result;
  w4: W4Result;
  w5: W5Result;
  w5x: W5Result;
}

/** One repetition's outcome: the result, or why the run failed. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: string };

/** Everything one `npm run bench` measured, before any summary. */
export interface Collected {
  readonly settings: BenchSettings;
  readonly startedAt: Date;
  finishedAt?: Date;
  readonly machine: MachineNotes;
  /** Loopback or the delay relay (absent in raw files from before BENCH_RTT_MS: loopback). */
  readonly network?: NetworkMode;
  /** The commit measured (absent in older raw files). */
  readonly revision?: Revision;
  readonly floors: {
    /** Through the relay in relay mode, like every client. */
    roundTrips: RoundTripFloor[];
    /** Relay mode only: the same floor straight to redis-server, to show what the relay adds. */
    directRoundTrips?: RoundTripFloor[];
    wake: WakeFloor[];
    cliLatency: Array<{ avgMs: number; samples: number }>;
  };
  readonly runs: Record<string, { [W in WorkloadId]?: Array<Outcome<WorkloadResults[W]>> }>;
  /** Adapters that could not run at all, with the reason. */
  readonly unavailable: Record<string, string>;
}

export interface MachineNotes {
  cpuModel: string;
  cores: number;
  memoryGb: number;
  os: string;
  node: string;
  redis: string;
  redisSource: string;
  pinning: string;
  loadAverageAtStart: string;
  loadAverageAtEnd?: string;
}
