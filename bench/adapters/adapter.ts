import type { BenchSettings, WorkloadId } from '../harness/settings';

/**
 * One lock library as the workloads see it: run `fn` while holding `key`, release afterwards, the
 * way that library's users write it.
 */
export interface LockAdapter {
  run<T>(key: string, fn: () => Promise<T>): Promise<T>;
  /**
   * True when `error` means the library gave up waiting (its own wait limit or retry budget), so
   * the caller may ask again; the workloads count these as give-ups.
   */
  gaveUp(error: unknown): boolean;
  close(): Promise<void>;
}

export interface AdapterSpec {
  /** Short id used on command lines and in job descriptions. */
  readonly id: string;
  /** Row label of the results tables. */
  readonly label: string;
  /** The settings this variant runs with, for RESULTS.md. */
  readonly settings: string;
  /** Our library: the ratios are taken against the `ours` row marked `reference`. */
  readonly ours?: boolean;
  readonly reference?: boolean;
  /** A row of the "Redisson layout: W1 and W4" section (harness/redisson-layout-section.ts). */
  readonly redissonLayout?: boolean;
  /** The workloads it runs, when not all of them; its row leaves the others out. */
  readonly workloads?: readonly WorkloadId[];
  /**
   * Measured outside the Node workers (Java Redisson in a JVM): runs its workloads itself; `create`
   * is not used.
   */
  readonly external?: ExternalWorkloads;
  /** Why the adapter cannot run in this tree, or undefined when it can. */
  unavailable(): string | undefined;
  /** Connects (lazily requiring the library, so each process loads only its own). */
  create(redisUrl: string): Promise<LockAdapter>;
}

/** A library measured by a program of its own (bench/adapters/redisson-java.ts). */
export interface ExternalWorkloads {
  /** One run of `workload`, the figures of the Node workload's result (plus `setupMs`). */
  run(workload: WorkloadId, redisUrl: string, settings: BenchSettings, timeoutMs: number): Promise<MeasuredOutside>;
}

export interface MeasuredOutside {
  /** Start-up and warm-up before the measured part, left out of the "not repeated over 10 s" rule. */
  readonly setupMs: number;
}

/** Whether `spec` measures `workload`. */
export function measures(spec: AdapterSpec, workload: WorkloadId): boolean {
  return !spec.workloads || spec.workloads.includes(workload);
}

/** The lease every adapter asks for where the library needs one: long enough never to expire mid-run. */
export const LEASE_MS = 30_000;
/** How long a waiter of our library or node-redisson waits before giving up (our `defaultWaitTime`). */
export const WAIT_MS = 5_000;
