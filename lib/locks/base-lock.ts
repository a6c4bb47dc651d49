import { LockError, LockNotHeldError, LockUnavailableError } from '../errors';
import { INVALID_TIME, NOT_CONNECTED, REPLICAS_NOT_SYNCED } from '../lock.messages';
import { LockKeys } from '../redis/lock-keys';
import { waitForReplicas } from '../redis/replica-sync';
import { boundedCall, type CallTicket } from '../redis/bounded-call';
import type { ScriptCall } from '../redis/lua-script';
import { isDown } from '../redis/redis-client';
import type { Sleeper, Waiter } from '../redis/unlock-subscriber';
import type { HeldLock, HoldTerms } from '../runtime/held-locks';
import type { LockEngine } from '../runtime/lock-engine';
import { cancellable, type Cancellation, reasonAsError } from '../runtime/cancellation';
import { observeAcquire, type LockKind } from '../metrics/lock-telemetry';
import type { Lock, LockOptions, TryLockOptions } from './lock';

/** A granted acquisition: its fencing token (none for a read lock). */
export interface Grant {
  readonly fencingToken: number | undefined;
}

/** Outcome of one acquisition attempt: a grant, or how long the lock may stay busy (ms). */
export type AttemptResult = Grant | number;

/** One attempt as the waiting loop sees it: Redis could not be asked (`LockUnavailableError`) too. */
type AttemptOutcome = AttemptResult | LockUnavailableError;

const NO_TOKEN: Grant = { fencingToken: undefined };

const isGrant = (outcome: AttemptOutcome): outcome is Grant => typeof outcome === 'object' && !(outcome instanceof LockUnavailableError);

/**
 * Reads an acquire script's reply: `{token}` (or nil, for a kind without tokens) when granted,
 * else the lock's TTL in ms.
 */
export function attemptResult(reply: unknown): AttemptResult {
  if (reply === null || reply === undefined) return NO_TOKEN;
  if (Array.isArray(reply)) return { fencingToken: Number(reply[0]) || undefined };
  return Number(reply);
}

/** Outcome of one release: `null` when not held, 0 when holds remain, 1 when released. */
export type ReleaseResult = 0 | 1 | null;

/** Pause after the n-th attempt in a row that could not reach Redis: 50 ms doubling up to 1 s. */
const unavailableRetryMs = (failures: number): number => Math.min(1_000, 50 * 2 ** Math.min(failures - 1, 5));

export function checkTime(what: string, value: number | undefined, allowInfinity: boolean): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0 || (!allowInfinity && !Number.isFinite(value))) {
    throw new RangeError(INVALID_TIME(what, value));
  }
}

/**
 * One acquisition, from its first attempt to its end: a small state object driven by callbacks (the
 * attempts' promises, and the waiter's sleep with this object as its sleeper) rather than a
 * suspended async function, so a sleeping waiter keeps only this, its seat and its promise: 20,000
 * waiters in one process add up.
 */
class Acquisition implements Sleeper {
  /** The seat on the lock's channel, taken when the first attempt finds the lock busy. */
  waiter: Waiter | undefined = undefined;
  outcome: AttemptOutcome | undefined = undefined;
  /** Set once an attempt's outcome is unknown (no answer in time): it may still be granted later. */
  outcomeUnknown = false;
  /** Attempts in a row that could not reach Redis (paces the retries). */
  failures = 0;
  acquired = false;
  ended = false;
  readonly deadline: number;
  resolve!: (acquired: boolean) => void;
  reject!: (error: unknown) => void;
  readonly settled: Promise<boolean>;

  constructor(
    private readonly lock: BaseLock,
    readonly leaseMs: number,
    readonly requestId: string,
    readonly waitMs: number,
    readonly options: LockOptions | undefined,
    readonly cancellation: Cancellation | undefined,
    /** A newcomer queued behind this process's waiters: its first round makes no attempt. */
    public queueFirst: boolean,
  ) {
    this.deadline = Date.now() + waitMs;
    this.settled = new Promise<boolean>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  woke(): void {
    this.lock.continueWait(this);
  }

  failed(error: Error): void {
    this.lock.endWait(this, { error });
  }
}

/** Settles an acquisition's promise: with true or false, or with `{ error }` as its rejection. */
function settle(acquisition: Acquisition, result: boolean | { readonly error: unknown }): void {
  if (typeof result === 'boolean') acquisition.resolve(result);
  else acquisition.reject(result.error);
}

/**
 * The waiting, holding and releasing every lock kind shares. A kind supplies its scripts through
 * `attempt`, `releaseOne` and `renewalCall`; this class waits on the shared subscriber between
 * attempts (never polling), tracks holds for the watchdog, and cancels renewal before a release.
 */
export abstract class BaseLock implements Lock {
  constructor(
    protected readonly engine: LockEngine,
    readonly name: string,
    /** The Redis key that identifies this lock (and the owner context entry). */
    readonly lockKey: string,
    readonly ownerId: string,
  ) {}

  /** One atomic acquisition attempt. */
  protected abstract attempt(leaseMs: number, requestId: string, joinLine: boolean, ticket?: CallTicket): Promise<AttemptResult>;
  /**
   * One atomic release of one hold; with `grantedBy` (an acquire request id), only of the hold that
   * request granted, if it did.
   */
  protected abstract releaseOne(requestId: string, grantedBy?: string, ticket?: CallTicket): Promise<ReleaseResult>;
  /** The script the watchdog replays to renew this owner's hold. */
  protected abstract renewalCall(leaseMs: number): ScriptCall;
  /** The `lock.kind` of this lock's metrics and spans. */
  abstract readonly kind: LockKind;

  /** Channel whose unlock messages wake this lock's waiters. */
  protected waitChannel(): string {
    return LockKeys.channel(this.lockKey);
  }

  /** Longest sleep between attempts (a fair lock's waiter must refresh its place in line). */
  protected maxSleepMs(): number {
    return Number.POSITIVE_INFINITY;
  }

  /** Called when a wait gives up without the lock (a fair lock leaves its line). */
  protected async abandonWait(): Promise<void> {}

  /**
   * Whether a newcomer queues behind this process's waiters instead of trying first (no barging).
   * A reader opts out: readers share the lock, so one waiting to write must not park them.
   */
  protected queuesBehindLocalWaiters(): boolean {
    return true;
  }

  /**
   * Releases one hold of this owner at shutdown, whichever object took it (the read and write views
   * of a read-write lock share one owner's hold record).
   */
  protected releaseAnyHold(): Promise<unknown> {
    return this.releaseOne(this.engine.ids.nextRequest());
  }

  async lock(options?: LockOptions): Promise<void> {
    await this.observedAcquire(Number.POSITIVE_INFINITY, options);
  }

  tryLock(options?: TryLockOptions): Promise<boolean> {
    return this.observedAcquire(options?.waitTime ?? 0, options);
  }

  /** An acquisition with its telemetry, cancellable through `options.signal`. */
  private observedAcquire(waitMs: number, options: LockOptions | undefined): Promise<boolean> {
    return observeAcquire(this.engine.telemetry, this.kind, this.name, options, () => this.getFencingToken(), () =>
      cancellable(options?.signal, (cancellation) => this.acquire(waitMs, options, cancellation)),
    );
  }

  unlock(): Promise<void> {
    const { holds, ids } = this.engine;
    const hold = holds.get(this.lockKey, this.ownerId);
    // Forget the hold first: the watchdog must not renew (resurrect) what is being released.
    if (hold) holds.released(hold);
    const requestId = ids.nextRequest();
    // A plain promise chain rather than an async function: one promise less per release.
    return this.engine.call(this.name, (ticket) => this.releaseOne(requestId, '', ticket)).then(
      (result) => {
        if (result === null) {
          if (hold) holds.forget(hold);
          throw new LockNotHeldError(this.name);
        }
        if (result === 1 && hold) holds.forget(hold);
      },
      (error: unknown) => {
        // Unknown outcome: the release may still apply (a resend answers the same); if it does not,
        // the lease ends the lock. Either way this process holds nothing any more.
        if (hold) holds.forget(hold);
        throw error;
      },
    );
  }

  async forceUnlock(): Promise<boolean> {
    const { scripts, client, publishCommand, wakeMessageOnForceUnlock } = this.engine;
    const keys = [this.lockKey, this.waitChannel()];
    const reply = await this.engine.call(this.name, (ticket) =>
      scripts.forceRelease.run(client, keys, [publishCommand, wakeMessageOnForceUnlock], ticket),
    );
    return reply === 1;
  }

  async isLocked(): Promise<boolean> {
    return (await this.engine.call(this.name, () => this.engine.client.exists(this.lockKey))) === 1;
  }

  async isHeldByCurrentOwner(): Promise<boolean> {
    return (await this.engine.call(this.name, () => this.engine.client.hexists(this.lockKey, this.ownerId))) === 1;
  }

  async getHoldCount(): Promise<number> {
    return Number((await this.engine.call(this.name, () => this.engine.client.hget(this.lockKey, this.ownerId))) ?? 0);
  }

  remainTimeToLive(): Promise<number> {
    return this.engine.call(this.name, () => this.engine.client.pttl(this.lockKey));
  }

  /** The current owner's fencing token, known locally: `undefined` when this owner holds nothing here. */
  getFencingToken(): number | undefined {
    return this.hold?.fencingToken;
  }

  /** The current owner's hold in this process, if any. */
  get hold(): HeldLock | undefined {
    return this.engine.holds.get(this.lockKey, this.ownerId);
  }

  /**
   * Acquires within `waitMs` (Infinity: no limit); resolves false when Redis kept answering "busy",
   * rejects with `LockUnavailableError` when the last attempt could not reach Redis. Settles by
   * `waitMs` plus at most one `commandTimeout`. The acquisition is an `Acquisition` driven by callbacks
   * from the first attempt on: no async frame, and the promise returned is the one that settles.
   */
  protected acquire(waitMs: number, options: LockOptions | undefined, cancellation?: Cancellation): Promise<boolean> {
    let acquisition: Acquisition;
    try {
      const leaseTime = options?.leaseTime;
      checkTime('waitTime', waitMs, true);
      checkTime('leaseTime', leaseTime, false);
      if (leaseTime === 0) throw new RangeError(INVALID_TIME('leaseTime (> 0)', leaseTime));
      const { engine } = this;
      // No barging: while other callers of this process already wait for the lock, a newcomer
      // (that does not hold it already) queues behind them instead of snatching each release, so a
      // task that releases and asks again cannot starve the others.
      const queueFirst =
        waitMs > 0 && !this.hold && this.queuesBehindLocalWaiters() && engine.subscriber.hasWaiters(this.waitChannel());
      const leaseMs = leaseTime ?? engine.options.watchdogTimeout;
      acquisition = new Acquisition(this, leaseMs, engine.ids.nextRequest(), waitMs, options, cancellation, queueFirst);
    } catch (error) {
      return Promise.reject(error);
    }
    if (acquisition.queueFirst) this.startWaiting(acquisition);
    else this.firstAttempt(acquisition);
    return acquisition.settled;
  }

  /** The first attempt; a fair lock's single attempt (waitTime 0) never joins the line. */
  private firstAttempt(acquisition: Acquisition): void {
    const { leaseMs, requestId, waitMs } = acquisition;
    this.attemptOnce(leaseMs, requestId, waitMs > 0)
      .then((outcome) => {
        if (isGrant(outcome)) return this.settleGrant(acquisition, outcome);
        this.noteMiss(acquisition, outcome);
        // waitTime 0 is one attempt; an attempt that used up the wait (Redis did not answer) ends it:
        // one commandTimeout at most.
        if (waitMs <= 0 || (outcome instanceof LockUnavailableError && Date.now() >= acquisition.deadline)) {
          return this.endWithoutLock(acquisition);
        }
        this.startWaiting(acquisition);
      })
      .then(undefined, (error: unknown) => this.endWait(acquisition, { error }));
  }

  /**
   * Takes a seat on the channel, then tries again once subscribed (a release may have happened
   * before the subscription).
   */
  private startWaiting(acquisition: Acquisition): void {
    let waiter: Waiter;
    try {
      waiter = this.engine.subscriber.seat(this.waitChannel());
    } catch (error) {
      return this.endWait(acquisition, { error });
    }
    acquisition.waiter = waiter;
    // Aborting wakes the waiter with the reason: it leaves its seat (and line) as the wait ends.
    acquisition.cancellation?.onCancel((reason) => waiter.cancel(reasonAsError(reason)));
    this.continueWait(acquisition);
  }

  /**
   * One round of a wait: wait (bounded) for the subscription, make one attempt, then sleep until a
   * wake (the `Acquisition` is the sleeper: no promise or frame is kept while it sleeps) or end.
   * Called by `startWaiting` and by `Acquisition` itself; internal.
   */
  continueWait(acquisition: Acquisition): void {
    const { engine } = this;
    const waiter = acquisition.waiter as Waiter; // seated before the first round
    engine.subscriber
      .subscribed(waiter, Math.min(engine.options.commandTimeout, acquisition.deadline - Date.now()))
      .then((subscribed) => {
        if (!acquisition.queueFirst) {
          return this.attemptOnce(acquisition.leaseMs, acquisition.requestId, true).then((outcome) =>
            this.afterAttempt(acquisition, waiter, outcome, subscribed),
          );
        }
        // A queued newcomer does not know the TTL yet: it sleeps at most one watchdog lease first.
        acquisition.queueFirst = false;
        return this.afterAttempt(acquisition, waiter, engine.options.watchdogTimeout, subscribed);
      })
      .then(undefined, (error: unknown) => this.endWait(acquisition, { error }));
  }

  private afterAttempt(acquisition: Acquisition, waiter: Waiter, outcome: AttemptOutcome, subscribed: boolean): void | Promise<void> {
    if (isGrant(outcome)) return this.settleGrant(acquisition, outcome);
    this.noteMiss(acquisition, outcome);
    const remaining = acquisition.deadline - Date.now();
    if (remaining <= 0) return this.endWithoutLock(acquisition);
    // A missed message never stalls a waiter: every sleep ends by the lock's TTL or the deadline;
    // without Redis (or without a subscription yet) it retries at a gentle pace.
    const { failures } = acquisition;
    let sleepMs = typeof outcome === 'number' ? Math.max(outcome, 1) : unavailableRetryMs(failures);
    if (!subscribed) sleepMs = Math.min(sleepMs, unavailableRetryMs(Math.max(failures, 1)));
    waiter.sleepThen(Math.max(1, Math.min(sleepMs, remaining, this.maxSleepMs())), acquisition);
  }

  /** An attempt that did not grant: "busy" (the TTL), or Redis could not be asked (it may grant later). */
  private noteMiss(acquisition: Acquisition, outcome: number | LockUnavailableError): void {
    acquisition.outcome = outcome;
    if (outcome instanceof LockUnavailableError) {
      acquisition.outcomeUnknown = true;
      acquisition.failures += 1;
    } else {
      acquisition.failures = 0;
    }
    acquisition.cancellation?.throwIfCancelled();
  }

  /** The wait is over without the lock: false after "busy", the error when Redis could not be asked. */
  private endWithoutLock(acquisition: Acquisition): void {
    const { outcome } = acquisition;
    this.endWait(acquisition, outcome instanceof LockUnavailableError ? { error: outcome } : false);
  }

  /**
   * Ends an acquisition once: leaves the seat, gives up when it ends without the lock (see
   * `giveUp`), then settles it with `result`. Internal (`Acquisition` ends a cancelled sleep here).
   */
  endWait(acquisition: Acquisition, result: boolean | { readonly error: unknown }): void {
    if (acquisition.ended) return;
    acquisition.ended = true;
    const { waiter, acquired } = acquisition;
    if (waiter) this.engine.subscriber.leave(waiter, acquired);
    if (acquired) return settle(acquisition, result);
    const { requestId, outcomeUnknown, outcome } = acquisition;
    const settleAfter = (): void => settle(acquisition, result);
    this.giveUp(requestId, outcomeUnknown, waiter !== undefined, outcome instanceof LockUnavailableError).then(settleAfter, settleAfter);
  }

  /**
   * A grant: recorded as held (or given back at once when the caller cancelled meanwhile), then the
   * acquisition resolves true. Without `syncReplicas` or a cancellation, no promise is made.
   */
  private settleGrant(acquisition: Acquisition, grant: Grant): void | Promise<void> {
    acquisition.acquired = true;
    const { leaseMs, options, cancellation } = acquisition;
    const holding = cancellation?.cancelled ? this.undoGrant(cancellation) : this.heldNow(leaseMs, options, grant);
    if (holding === true) return this.endWait(acquisition, true);
    return holding.then(
      () => this.endWait(acquisition, true),
      (error: unknown) => this.endWait(acquisition, { error }),
    );
  }

  /**
   * One attempt, bounded by `commandTimeout`; Redis failures come back as a value. While the
   * connection is between reconnects nothing is sent (ioredis would queue it, to run who knows
   * when): the attempt is "unavailable" at once and the wait retries when the connection is back.
   */
  private attemptOnce(leaseMs: number, requestId: string, joinLine: boolean): Promise<AttemptOutcome> {
    if (isDown(this.engine.client)) {
      return Promise.resolve(new LockUnavailableError(this.name, new Error(NOT_CONNECTED(this.engine.client.status))));
    }
    return this.engine.attempt(this.name, (ticket) => this.attempt(leaseMs, requestId, joinLine, ticket));
  }

  /**
   * An acquisition ends without the lock. A fair waiter leaves its line. When an attempt's outcome
   * is unknown, its late grant must not leave a hold nobody owns: the release that only undoes a
   * grant made by this request goes out on the same connection, after the attempts, so it runs
   * after them whenever Redis gets to them. While Redis is unreachable neither is waited for, so the
   * acquisition still settles within its bound.
   */
  private async giveUp(requestId: string, outcomeUnknown: boolean, waited: boolean, unreachable: boolean): Promise<void> {
    const { engine } = this;
    if (waited) {
      const leaving = engine.call(this.name, () => this.abandonWait()).catch(() => undefined);
      if (!unreachable) await leaving;
    }
    if (outcomeUnknown) {
      const releaseId = engine.ids.nextRequest();
      void engine.call(this.name, () => this.releaseOne(releaseId, requestId)).catch(() => undefined);
    }
  }

  /**
   * A grant that arrived after the caller cancelled (its promise already rejected): give the hold
   * back at once, so nobody holds what nobody waits for.
   */
  private async undoGrant(cancellation: Cancellation): Promise<never> {
    const releaseId = this.engine.ids.nextRequest();
    await this.engine.call(this.name, (ticket) => this.releaseOne(releaseId, '', ticket)).catch(() => undefined);
    throw cancellation.reason;
  }

  /** Records the hold, after the replicas confirmed it when `syncReplicas` asks for that (no promise otherwise). */
  private heldNow(leaseMs: number, options: LockOptions | undefined, grant: Grant): true | Promise<true> {
    if (this.engine.options.syncReplicas > 0) return this.confirmReplicated().then(() => this.recordHold(leaseMs, options, grant));
    return this.recordHold(leaseMs, options, grant);
  }

  private recordHold(leaseMs: number, options: LockOptions | undefined, grant: Grant): true {
    const leaseTime = options?.leaseTime;
    const terms: HoldTerms = {
      leaseMs,
      fencingToken: grant.fencingToken,
      renewal: leaseTime === undefined ? { client: this.engine.client, call: this.renewalCall(leaseMs) } : undefined,
      releaseOne: () => this.releaseAnyHold(),
      telemetry: this.engine.telemetry?.holdTelemetry(this.kind, this.name, options),
    };
    this.engine.holds.acquired(this.name, this.lockKey, this.ownerId, terms);
    return true;
  }

  /**
   * `syncReplicas`: waits until that many replicas have the acquisition, so a failover is less
   * likely to lose it; when fewer confirm in time, lets go of it again and fails.
   */
  private async confirmReplicated(): Promise<void> {
    const { syncReplicas, syncReplicasTimeout, commandTimeout } = this.engine.options;
    let confirmed: number;
    try {
      // WAIT itself may take syncReplicasTimeout: the bound is that plus one commandTimeout.
      confirmed = await boundedCall(this.name, syncReplicasTimeout + commandTimeout, () =>
        waitForReplicas(this.engine.client, this.lockKey, syncReplicas, syncReplicasTimeout),
      );
    } catch (error) {
      void this.engine.call(this.name, () => this.releaseOne(this.engine.ids.nextRequest())).catch(() => undefined);
      throw error;
    }
    if (confirmed >= syncReplicas) return;
    await this.engine.call(this.name, () => this.releaseOne(this.engine.ids.nextRequest())).catch(() => undefined);
    throw new LockError(REPLICAS_NOT_SYNCED(this.name, confirmed, syncReplicas, syncReplicasTimeout));
  }
}
