/** Options of `Semaphore.acquire()` / `tryAcquire()`. */
export interface AcquireOptions {
  /** How many permits to take at once (1 to the semaphore's `permits`). Default 1. */
  take?: number;
  /**
   * How long to wait, in ms. `acquire()` without it waits without limit; `tryAcquire()` without it
   * makes one attempt (and never joins the line).
   */
  waitTime?: number;
  /**
   * Lease in ms: the permits go back by themselves after it and are never renewed. Omit it to let
   * the watchdog renew. Whole milliseconds: a fraction is rounded up.
   */
  leaseTime?: number;
  /**
   * Cancels the wait: once aborted, the pending acquisition rejects at once with the signal's reason
   * and leaves no waiter, subscription or place in line behind. No effect once acquired.
   */
  signal?: AbortSignal;
  /**
   * The `lock.key_template` attribute of this acquisition's metrics and span (e.g. `'export:#tenantId'`;
   * `@DistributedSemaphore` passes its key template); the concrete name is never recorded unless the
   * module's `telemetryLockNames` option says so.
   */
  metricName?: string;
}

/** Options of `SemaphoreService.getSemaphore()`. */
export interface SemaphoreOptions {
  /** The limit: at most this many permits are held at once, across every process. */
  permits: number;
}

/** Which holder `SemaphoreService.forceRelease()` takes permits back from. */
export interface SemaphoreForceReleaseOptions {
  /**
   * The holder's permit id (its `ownerId` in `inspect()`). Optional: the token alone names one
   * holder (tokens are unique per semaphore); with it the lookup is one read instead of one per holder.
   */
  permitId?: string;
  /** The fencing token of the holder's permits, as `inspect()` showed it: nothing is released unless that holder still holds them with it. */
  fencingToken: number;
}

/** Options of `SemaphoreService.run()`. */
export interface SemaphoreRunOptions extends SemaphoreOptions, AcquireOptions {}

/** What `SemaphoreService.inspect()` reports. */
export interface SemaphoreInfo {
  /** The semaphore's name. */
  readonly name: string;
  /** Always `semaphore` (`list()` reports locks and semaphores together). */
  readonly kind: 'semaphore';
  /** The limit the semaphore is in use with; `undefined` when nobody holds or waits for it. */
  readonly permits: number | undefined;
  /** Permits free right now (`undefined` when the semaphore is not in use: all of them). */
  readonly available: number | undefined;
  /**
   * The Redis server's clock when it answered, in ms since the epoch: each holder's `ttl` and
   * `heldSince` are on it (a holder's age is `serverTime - heldSince`).
   */
  readonly serverTime: number;
  /** Live holders: permit id (an owner id, `clientId:n`), permits taken, remaining lease in ms, fencing token, held since. */
  readonly holders: ReadonlyArray<{
    /** The permit id (an owner id). */
    ownerId: string;
    /** Permits taken. */
    permits: number;
    /** Remaining lease in ms. */
    ttl: number;
    /** The permits' fencing token (0 in layout 'redisson': no tokens there). */
    fencingToken: number;
    /**
     * When the permits were granted, in ms on the server's clock: read from the fencing token (the
     * server's clock in µs at the grant; see `LockHolderInfo.heldSince` for its precision).
     */
    heldSince?: number;
  }>;
  /** Waiters in line order, with the permits each asks for. */
  readonly waiters: ReadonlyArray<{
    /** The waiter's owner id. */
    ownerId: string;
    /** Permits it asks for. */
    permits: number;
  }>;
}
