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
  /** Why the adapter cannot run in this tree, or undefined when it can. */
  unavailable(): string | undefined;
  /** Connects (lazily requiring the library, so each process loads only its own). */
  create(redisUrl: string): Promise<LockAdapter>;
}

/** The lease every adapter asks for where the library needs one: long enough never to expire mid-run. */
export const LEASE_MS = 30_000;
/** How long a waiter of our library or node-redisson waits before giving up (our `defaultWaitTime`). */
export const WAIT_MS = 5_000;
