import { LockError, LockNotHeldError, LockTimeoutError, LockUnavailableError } from '../errors';
import { INVALID_TIME, REPLICAS_NOT_SYNCED } from '../lock.messages';
import { checkTime } from '../locks/base-lock';
import { observeAcquire } from '../metrics/lock-telemetry';
import type { CallTicket } from '../redis/bounded-call';
import { withHashTag } from '../redis/lock-keys';
import { LuaScript } from '../redis/lua-script';
import { waitForReplicas } from '../redis/replica-sync';
import type { Waiter } from '../redis/unlock-subscriber';
import type { HeldLock, HoldTerms } from '../runtime/held-locks';
import type { LockEngine } from '../runtime/lock-engine';
import { SemaphoreLimitError } from './semaphore-errors';

const semaphoreScripts = {
  acquire: LuaScript.named('semaphore-acquire'),
  release: LuaScript.named('semaphore-release'),
  renew: LuaScript.named('semaphore-renew'),
  inspect: LuaScript.named('semaphore-inspect'),
};

/** Options of `Semaphore.acquire()` / `tryAcquire()`. */
export interface AcquireOptions {
  /** How many permits to take at once (1 to the semaphore's `permits`). Default 1. */
  take?: number;
  /**
   * How long to wait, in ms. `acquire()` without it waits without limit; `tryAcquire()` without it
   * makes one attempt (and never joins the line).
   */
  waitTime?: number;
  /** Lease in ms: the permits go back by themselves after it and are never renewed. Omit it to let the watchdog renew. */
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

/** Options of `SemaphoreService.run()`. */
export interface SemaphoreRunOptions extends SemaphoreOptions, AcquireOptions {}

/** What `SemaphoreService.inspect()` reports. */
export interface SemaphoreInfo {
  readonly name: string;
  readonly kind: 'semaphore';
  /** The limit the semaphore is in use with; `undefined` when nobody holds or waits for it. */
  readonly permits: number | undefined;
  /** Permits free right now (`undefined` when the semaphore is not in use: all of them). */
  readonly available: number | undefined;
  /** Live holders: permit id (an owner id, `clientId:n`), permits taken, remaining lease in ms, fencing token. */
  readonly holders: ReadonlyArray<{ ownerId: string; permits: number; ttl: number; fencingToken: number }>;
  /** Waiters in line order, with the permits each asks for. */
  readonly waiters: ReadonlyArray<{ ownerId: string; permits: number }>;
}

/** Pause after the n-th attempt in a row that could not reach Redis: 50 ms doubling up to 1 s (as the locks). */
const unavailableRetryMs = (failures: number): number => Math.min(1_000, 50 * 2 ** Math.min(failures - 1, 5));

/** One acquisition as a cancellation sees it. */
interface Pending {
  cancelled?: unknown;
  waiter?: Waiter;
}

type Attempt = { fencingToken: number } | number | LockUnavailableError;

const isGrant = (outcome: Attempt): outcome is { fencingToken: number } =>
  typeof outcome === 'object' && !(outcome instanceof LockUnavailableError);

/** The Redis keys of one semaphore: one hash tag, so they share a cluster slot. */
export class SemaphoreKeys {
  readonly base: string;
  readonly leases: string;
  readonly line: string;
  readonly deadlines: string;
  readonly fence: string;
  readonly channel: string;

  constructor(keyPrefix: string, name: string) {
    this.base = `${keyPrefix}sem:${withHashTag(name)}`;
    this.leases = `${this.base}:leases`;
    this.line = `${this.base}:line`;
    this.deadlines = `${this.base}:deadlines`;
    this.fence = `${this.base}:fence`;
    this.channel = `${this.base}:channel`;
  }

  releaseRecord(permitId: string, requestId: string): string {
    return `${this.base}:rq:${permitId}:${requestId}`;
  }
}

/**
 * Permits taken from a semaphore: held by their own owner id with a lease the watchdog renews (or
 * a fixed `leaseTime`). Release them once, in a `finally`.
 */
export class Permit {
  private released = false;

  constructor(
    private readonly semaphore: Semaphore,
    /** This acquisition's owner id (`clientId:n`), as `inspect` lists it. */
    readonly ownerId: string,
    /** How many permits this acquisition holds. */
    readonly take: number,
    /** Strictly greater than every token handed out before for this semaphore, by any process. */
    readonly fencingToken: number,
    private readonly hold: HeldLock,
  ) {}

  get name(): string {
    return this.semaphore.name;
  }

  /** Aborted with a `LockLostError` if the library learns these permits were lost (lease ended, renewal found them gone). */
  get signal(): AbortSignal {
    return this.hold.signal;
  }

  /**
   * Gives the permits back and wakes the waiters they admit. Rejects with `LockNotHeldError` when
   * they were lost (their lease ended) or already released.
   */
  async release(): Promise<void> {
    if (this.released) throw new LockNotHeldError(this.name);
    this.released = true;
    const { holds } = this.semaphore.engine;
    // Stop renewing first: a renewal racing the release must never extend released permits.
    holds.forget(this.hold);
    const given = await this.semaphore.giveBack(this.ownerId, false);
    if (given !== 1) throw new LockNotHeldError(this.name);
  }
}

/**
 * A distributed counting semaphore: at most `permits` permits held at once across every process.
 * Waiters stand in one FIFO line in Redis (server clock, heartbeats, like the fair lock) and sleep on
 * the shared subscriber; a release wakes exactly the waiters its permits admit.
 */
export class Semaphore {
  readonly keys: SemaphoreKeys;

  constructor(
    /** @internal */
    readonly engine: LockEngine,
    readonly name: string,
    /** The limit this object asks with (see `SemaphoreLimitError`). */
    readonly permits: number,
  ) {
    this.keys = new SemaphoreKeys(engine.options.keyPrefix, name);
  }

  /**
   * Takes `take` permits (default 1), waiting up to `waitTime` (no `waitTime`: without limit).
   * Rejects with `LockTimeoutError` when not acquired in time, `LockUnavailableError` when Redis
   * could not be asked, the signal's reason when cancelled.
   */
  async acquire(options?: AcquireOptions): Promise<Permit> {
    const waitTime = options?.waitTime ?? Number.POSITIVE_INFINITY;
    const permit = await this.acquireWithin(waitTime, options);
    if (!permit) throw new LockTimeoutError(this.name, waitTime);
    return permit;
  }

  /**
   * Takes `take` permits within `waitTime` (default 0: one attempt, which never joins the line);
   * resolves `null` when Redis kept answering "busy", rejects with `LockUnavailableError` when it
   * could not be asked.
   */
  tryAcquire(options?: AcquireOptions): Promise<Permit | null> {
    return this.acquireWithin(options?.waitTime ?? 0, options);
  }

  /** Permits free right now (the limit stored with the semaphore counts when it is in use). */
  async availablePermits(): Promise<number> {
    const [limit, used] = await this.read(false);
    return Math.max(0, (limit || this.permits) - used);
  }

  /** @internal The state as `SemaphoreService.inspect` reports it. */
  async inspect(): Promise<SemaphoreInfo> {
    const [limit, used, holders, waiters] = await this.read(true);
    const info: SemaphoreInfo = {
      name: this.name,
      kind: 'semaphore',
      permits: limit || undefined,
      available: limit ? Math.max(0, limit - used) : undefined,
      holders: [],
      waiters: [],
    };
    for (let i = 0; i < holders.length; i += 4) {
      (info.holders as unknown[]).push({
        ownerId: String(holders[i]),
        permits: Number(holders[i + 1]),
        ttl: Number(holders[i + 2]),
        fencingToken: Number(holders[i + 3]),
      });
    }
    for (let i = 0; i < waiters.length; i += 2) {
      (info.waiters as unknown[]).push({ ownerId: String(waiters[i]), permits: Number(waiters[i + 1]) });
    }
    return info;
  }

  /**
   * @internal Gives back the permits of `permitId` (a release), or, for a waiter giving up
   * (`leaving`), leaves the line and gives back what a late attempt may have granted.
   */
  async giveBack(permitId: string, leaving: boolean): Promise<number | null> {
    const { engine, keys } = this;
    const { client, publishCommand, releaseRecordTtlMs } = engine;
    const requestId = engine.ids.nextRequest();
    // No ticket: a release is safe to apply late, so a NOSCRIPT answered after the caller stopped
    // waiting still sends the source (a first release during an outage must not be dropped).
    const reply = await engine.call(this.name, () =>
      semaphoreScripts.release.run(
        client,
        [keys.base, keys.leases, keys.line, keys.deadlines, keys.channel, keys.releaseRecord(permitId, requestId)],
        [permitId, publishCommand, releaseRecordTtlMs, leaving ? 1 : 0],
      ),
    );
    return reply === null || reply === undefined ? null : Number(reply);
  }

  private read(detailed: boolean): Promise<[number, number, unknown[], unknown[]]> {
    const { engine, keys } = this;
    return engine.call(this.name, async (ticket) => {
      const reply = (await semaphoreScripts.inspect.run(
        engine.client,
        [keys.base, keys.leases, keys.line, keys.deadlines],
        [detailed ? 1 : 0],
        ticket,
      )) as [number, number, unknown[], unknown[]];
      return [Number(reply[0]), Number(reply[1]), reply[2] ?? [], reply[3] ?? []];
    });
  }

  private checkRequest(options: AcquireOptions | undefined, waitMs: number): number {
    const take = options?.take ?? 1;
    if (!Number.isInteger(take) || take < 1 || take > this.permits) {
      throw new RangeError(`take must be a whole number from 1 to the semaphore's permits (${this.permits}) (got ${String(take)})`);
    }
    checkTime('waitTime', waitMs, true);
    checkTime('leaseTime', options?.leaseTime, false);
    if (options?.leaseTime === 0) throw new RangeError(INVALID_TIME('leaseTime (> 0)', 0));
    return take;
  }

  /**
   * An acquisition with the locks' telemetry (DESIGN §10, `lock.kind` = `semaphore`): `lock.waiting`,
   * `lock.acquisitions` and `lock.wait.duration` by outcome, the span `lock.acquire <template>`.
   */
  private acquireWithin(waitMs: number, options: AcquireOptions | undefined): Promise<Permit | null> {
    const { telemetry } = this.engine;
    if (!telemetry) return this.acquireUnobserved(waitMs, options);
    let permit: Permit | null = null;
    return observeAcquire(
      telemetry,
      'semaphore',
      this.name,
      options,
      () => permit?.fencingToken,
      () => this.acquireUnobserved(waitMs, options).then((granted) => (permit = granted) !== null),
    ).then(() => permit);
  }

  private async acquireUnobserved(waitMs: number, options: AcquireOptions | undefined): Promise<Permit | null> {
    const take = this.checkRequest(options, waitMs);
    const signal = options?.signal;
    signal?.throwIfAborted();
    const permitId = this.engine.ids.nextOwner();
    const pending: Pending = {};
    const acquisition = this.waitFor(permitId, take, waitMs, options, pending);
    if (!signal) return acquisition;
    return new Promise<Permit | null>((resolve, reject) => {
      const onAbort = (): void => {
        pending.cancelled = signal.reason;
        const waiter = pending.waiter;
        if (waiter) {
          // Give up the seat now (the subscription goes with the last one); the line place and any
          // late grant are undone by the acquisition's own clean-up as it unwinds.
          this.engine.subscriber.leave(waiter);
          waiter.cancel(signal.reason as Error);
        }
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      acquisition.then(
        (permit) => {
          signal.removeEventListener('abort', onAbort);
          if (pending.cancelled === undefined) resolve(permit);
          else if (permit) void permit.release().catch(() => undefined);
        },
        (error: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      );
    });
  }

  /**
   * The waiting loop: attempt; take a seat on the semaphore's channel; once subscribed, attempt
   * again (a release may have come before the subscription); then sleep until a release names this
   * waiter, the first lease may end, a heartbeat is due or the wait ends. Never polls.
   */
  private async waitFor(
    permitId: string,
    take: number,
    waitMs: number,
    acquireOptions: AcquireOptions | undefined,
    pending: Pending,
  ): Promise<Permit | null> {
    const { engine } = this;
    const leaseTime = acquireOptions?.leaseTime;
    const { subscriber, options } = engine;
    const leaseMs = leaseTime ?? options.watchdogTimeout;
    const deadline = Date.now() + waitMs;
    const joinLine = waitMs > 0;
    // Heartbeats: a waiter's place in line lasts fairLockWaiterTimeout; renew it three times per.
    const heartbeatMs = Math.max(1, Math.floor(options.fairLockWaiterTimeout / 3));
    let waiter: Waiter | undefined;
    let acquired = false;
    // Set once this acquisition may have a place in line or a grant nobody will use.
    let cleanUp = joinLine;
    let unreachable = false;
    try {
      let subscribed = false;
      if (joinLine && subscriber.hasWaiters(this.keys.channel)) {
        // Others of this process wait already, so the channel is subscribed (or on its way): seated
        // before the first attempt, a release that names this waiter right after it is kept and no
        // second attempt is needed. An uncontended acquisition never subscribes.
        waiter = pending.waiter = subscriber.seat(this.keys.channel, permitId);
        subscribed = await subscriber.subscribed(waiter, 0);
      }
      let failures = 0;
      let outcome = await this.attemptOnce(permitId, take, leaseMs, joinLine);
      if (joinLine && !waiter && !isGrant(outcome) && pending.cancelled === undefined) {
        waiter = pending.waiter = subscriber.seat(this.keys.channel, permitId);
      }
      for (;;) {
        if (pending.cancelled !== undefined) {
          cleanUp ||= typeof outcome !== 'number';
          throw pending.cancelled;
        }
        if (isGrant(outcome)) {
          const permit = await this.held(permitId, take, leaseMs, acquireOptions, outcome.fencingToken);
          acquired = true;
          return permit;
        }
        unreachable = outcome instanceof LockUnavailableError;
        cleanUp ||= joinLine || unreachable;
        failures = unreachable ? failures + 1 : 0;
        const remaining = deadline - Date.now();
        if (!waiter || remaining <= 0) {
          if (outcome instanceof LockUnavailableError) throw outcome;
          return null;
        }
        if (!subscribed) {
          subscribed = await subscriber.subscribed(waiter, Math.min(options.commandTimeout, remaining));
          if (subscribed) {
            if (pending.cancelled !== undefined) throw pending.cancelled;
            outcome = await this.attemptOnce(permitId, take, leaseMs, true);
            continue;
          }
        }
        let sleepMs = typeof outcome === 'number' ? Math.max(outcome, 1) : unavailableRetryMs(failures);
        if (!subscribed) sleepMs = Math.min(sleepMs, unavailableRetryMs(Math.max(failures, 1)));
        await waiter.sleep(Math.max(1, Math.min(sleepMs, deadline - Date.now(), heartbeatMs)));
        if (pending.cancelled !== undefined) throw pending.cancelled;
        outcome = await this.attemptOnce(permitId, take, leaseMs, true);
      }
    } finally {
      if (waiter) subscriber.leave(waiter);
      if (!acquired && cleanUp) {
        // Leave the line, and give back what an attempt whose answer was lost may have granted: the
        // call goes out after the attempts on the same connection, so it runs after them.
        const leaving = this.giveBack(permitId, true).catch(() => undefined);
        if (!unreachable) await leaving;
      }
    }
  }

  /** One attempt, bounded by `commandTimeout`; Redis failures come back as a value. */
  private attemptOnce(permitId: string, take: number, leaseMs: number, joinLine: boolean): Promise<Attempt> {
    const { engine, keys } = this;
    const { client, options, publishCommand, fenceMemoryMs } = engine;
    return engine.attempt(this.name, async (ticket: CallTicket) => {
      const reply = await semaphoreScripts.acquire.run(
        client,
        [keys.base, keys.leases, keys.line, keys.deadlines, keys.fence, keys.channel],
        [this.permits, take, leaseMs, permitId, options.fairLockWaiterTimeout, joinLine ? 1 : 0, publishCommand, fenceMemoryMs],
        ticket,
      );
      if (!Array.isArray(reply)) return Number(reply);
      if (reply[0] === 'limit') throw new SemaphoreLimitError(this.name, this.permits, Number(reply[1]));
      return { fencingToken: Number(reply[0]) };
    });
  }

  private async held(
    permitId: string,
    take: number,
    leaseMs: number,
    acquireOptions: AcquireOptions | undefined,
    fencingToken: number,
  ): Promise<Permit> {
    const { engine, keys } = this;
    const leaseTime = acquireOptions?.leaseTime;
    if (engine.options.syncReplicas > 0) {
      const { syncReplicas, syncReplicasTimeout } = engine.options;
      const confirmed = await waitForReplicas(engine.client, keys.base, syncReplicas, syncReplicasTimeout);
      if (confirmed < syncReplicas) {
        await this.giveBack(permitId, true).catch(() => undefined);
        throw new LockError(REPLICAS_NOT_SYNCED(this.name, confirmed, syncReplicas, syncReplicasTimeout));
      }
    }
    const terms: HoldTerms = {
      leaseMs,
      fencingToken,
      renewal:
        leaseTime === undefined
          ? { client: engine.client, call: { script: semaphoreScripts.renew, keys: [keys.base, keys.leases], args: [leaseMs, permitId] } }
          : undefined,
      releaseOne: () => this.giveBack(permitId, false),
      // `lock.held` / `lock.hold.duration` / `lock.lost`: one hold per Permit, whatever its `take`.
      telemetry: engine.telemetry?.holdTelemetry('semaphore', this.name, acquireOptions),
    };
    const hold = engine.holds.acquired(this.name, keys.base, permitId, terms);
    return new Permit(this, permitId, take, fencingToken, hold);
  }
}
