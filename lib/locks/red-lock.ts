import { LockError, LockNotHeldError, LockUnavailableError, ReentryEndedError } from '../errors';
import { attemptOver, ownerTraffic, releaseSent, type OwnerTraffic } from './red-lock-traffic';
import { LOST_REENTRY_ENDED, REDLOCK_NO_MAJORITY } from '../lock.messages';
import type { HeldLock, HoldTerms } from '../runtime/held-locks';
import { endHold } from '../runtime/hold-registry';
import { HandleList } from './hold-handles';
import type { LockEngine } from '../engine/lock-engine';
import type { RedisClient } from '../redis/redis-client';
import type { RedLockMasters, Votes } from '../runtime/redlock-masters';
import { Acquisition, type AttemptOutcome, type Contender, type Grant, type WaitRoom } from './acquisition';
import { observeAcquire } from '../metrics/lock-telemetry';
import { cancellable, type Cancellation } from '../runtime/cancellation';
import type { ForceUnlockOptions, LockOptions, LockRunContext, TryLockOptions } from './lock';
import type { OwnedLock } from './owned-lock';
import { heldLocksOf, runContextOf } from './owned-lock';
import type { WaitTarget } from '../deadlocks/wait-node';
import { leaseDriftMs } from '../runtime/held-locks';
import { monotonicNow } from '../monotonic-clock';
import { ENDED, type RedLockCalls } from './red-lock-calls';

/**
 * Waiting for a RedLock retries after a random pause (the Redlock algorithm's jitter, so
 * contenders do not keep colliding) instead of subscribing: a subscription lives on one server, and
 * RedLock must not depend on any one master being up. A hand-off therefore takes up to
 * `RETRY_DELAY_MS + RETRY_JITTER_MS`, not one round trip.
 */
const RETRY_DELAY_MS = 50;
const RETRY_JITTER_MS = 100;

/** Prefix of a RedLock's identity in the owner context and hold registry, apart from a plain lock of the same name. */
const REDLOCK_IDENTITY = 'redlock\n';


/**
 * The Redlock algorithm over the independent masters of `redlock.clients` (docs/architecture.md#redlock): the same
 * key on every master; acquired when a majority (N/2 + 1) granted it within the lease minus the
 * time spent asking minus the drift allowance; otherwise released on all N. Re-entry is counted in
 * this process (every master holds a count of 1, see lua/redlock-acquire.lua), and re-arms the
 * lease on the masters like a fresh attempt. The watchdog renews on every master and keeps the lock
 * while a majority still holds it; below that the holder's signal aborts with `LockLostError`.
 *
 * In the native layout each acquisition carries a fencing token: the largest of the granting
 * masters' tokens, written back to them before the lock counts as held, so the next RedLock of the
 * name (whose majority shares a master with this one's) gets a larger one; in Redisson's layout
 * there is none. What is written on each master is the layout's (`RedLockCalls`). Safety otherwise
 * rests on bounded clock drift and process pauses shorter than the lease: see
 * docs/lock-kinds.md#redlock-safety-limits.
 */
export class RedLock implements OwnedLock, Contender<boolean> {
  readonly lockKey: string;
  readonly kind = 'redlock';
  /**
   * The key on every master: `keyPrefix` + the name's segment, like every lock key
   * (docs/architecture.md#keys); in Redisson's layout the mapped name.
   */
  readonly masterKey: string;

  constructor(
    /** @internal */
    readonly engine: LockEngine,
    private readonly masters: RedLockMasters,
    readonly name: string,
    /** What the layout writes on each master. */
    private readonly calls: RedLockCalls,
    readonly ownerId: string,
  ) {
    this.masterKey = calls.key;
    this.lockKey = RedLock.identity(calls.key);
  }

  /** The RedLock's `lockKey` in this process: apart from the plain lock's, which may use the same key. */
  static identity(masterKey: string): string {
    return REDLOCK_IDENTITY + masterKey;
  }

  /** The hold this object's last acquisition counted on while current, else the owner's current hold. */
  get hold(): HeldLock | undefined {
    const { holds } = this.engine;
    const last = this.taken.last;
    return last && holds.isCurrent(last) ? last : holds.get(this.lockKey, this.ownerId);
  }

  get runName(): string {
    return this.name;
  }

  heldLocks(): readonly HeldLock[] {
    return heldLocksOf(this);
  }

  runContext(): LockRunContext {
    return runContextOf(this);
  }

  /** The renewal with `ms` as the lease on every master (a majority must still hold it), in place of the release. */
  async keepHeldFor(ms: number): Promise<void> {
    const hold = this.taken.last;
    if (!hold || !this.engine.holds.isCurrent(hold) || hold.holdCount > 1) return this.unlock();
    this.taken.takeLast();
    // Out of the registry first, as a release: the watchdog must not renew it past `ms` meanwhile.
    this.engine.holds.released(hold);
    // The exact renewal shortens the owner's one key on each master: like a release, it may reach a
    // master after the grant of a round of the same owner in progress, which must not trust it then.
    releaseSent(this.engine, this.lockKey, this.ownerId);
    if (!(await this.renew(ms, true))) throw new LockNotHeldError(this.name);
  }

  async lock(options?: LockOptions): Promise<void> {
    await this.observedAcquire(Number.POSITIVE_INFINITY, options);
  }

  tryLock(options?: TryLockOptions): Promise<boolean> {
    return this.observedAcquire(options?.waitTime ?? 0, options);
  }

  private observedAcquire(waitMs: number, options: LockOptions | undefined): Promise<boolean> {
    return observeAcquire(this.engine.telemetry, this.kind, this.name, options, () => this.getFencingToken(), () =>
      cancellable(options?.signal, (cancellation) => this.acquire(waitMs, options, cancellation)),
    );
  }

  /**
   * Releases one hold; the last one releases on every master. Rejects with `LockNotHeldError` when
   * no master held it for this owner (an error when no master could be reached).
   */
  async unlock(): Promise<void> {
    const { holds } = this.engine;
    // The hold this object took: one owed to a hold that ended first, else the last. An ended one is
    // not sent (a release on the masters names no episode): nothing released.
    const hold = this.taken.takeForUnlock();
    if (!hold || !holds.isCurrent(hold)) throw new LockNotHeldError(this.name);
    // Out of the registry before the release goes out, so the watchdog cannot renew it meanwhile.
    if (!holds.released(hold)) return;
    const votes = await this.releaseEverywhere();
    if (votes.yes > 0) return;
    if (votes.failed > 0) {
      throw this.unavailable(votes.firstError ?? new LockError(REDLOCK_NO_MAJORITY(this.name, 0, this.masters.clients.length, 1)));
    }
    throw new LockNotHeldError(this.name);
  }

  /**
   * Deletes the lock on every master, whoever holds it (with `fencingToken`: on each master where
   * the hold has that token; a master that granted but whose fence was not raised keeps its own
   * token and its hold, which ends with its lease); true when any master released it. In Redisson's
   * layout a `fencingToken` is refused with a `TypeError` (no token is stored).
   */
  async forceUnlock(release?: ForceUnlockOptions): Promise<boolean> {
    const votes = await this.masters.ask(this.calls.forceRelease(release), this.queryTimeout(), { until: 'all', evenIfDown: true });
    return votes.yes > 0;
  }

  /** True when a majority of the masters has the lock (whoever holds it). */
  async isLocked(): Promise<boolean> {
    const votes = await this.masters.ask(async (client) => (await client.exists(this.masterKey)) === 1, this.queryTimeout());
    return this.majorityAnswer(votes);
  }

  /** True when a majority of the masters has the lock for this owner. */
  async isHeldByCurrentOwner(): Promise<boolean> {
    const votes = await this.masters.ask(
      async (client) => (await client.hexists(this.masterKey, this.ownerId)) === 1,
      this.queryTimeout(),
    );
    return this.majorityAnswer(votes);
  }

  /** The fencing token of this owner's hold, known locally: `undefined` when not held (always in Redisson's layout). */
  getFencingToken(): number | undefined {
    return this.hold?.fencingToken;
  }

  /** This owner's holds (counted in this process) while a majority of the masters holds it; else 0. */
  async getHoldCount(): Promise<number> {
    if (!(await this.isHeldByCurrentOwner())) return 0;
    return this.hold?.holdCount ?? 1;
  }

  /** How long a majority of the masters keeps the lock (ms); -2 when it is not held by a majority. */
  async remainTimeToLive(): Promise<number> {
    const ttls = await this.masters.askEach((client) => client.pttl(this.masterKey), this.queryTimeout());
    const known = ttls.map((ttl) => ttl ?? -2).sort((a, b) => b - a);
    const majorityTtl = known[this.masters.quorum - 1];
    return majorityTtl >= 0 ? majorityTtl : -2;
  }

  /** An acquisition by the acquisition machine, with this RedLock as its contender. */
  private acquire(waitMs: number, options: LockOptions | undefined, cancellation?: Cancellation): Promise<boolean> {
    return Acquisition.start<boolean>(this, waitMs, false, options, cancellation);
  }

  // The contender's side of an acquisition (see `Contender` in acquisition.ts).

  /** @internal What a wait for this RedLock waits for: no records, no line (docs/deadlocks.md#across-processes-after-deadlockcheckafter). */
  get waitTarget(): WaitTarget {
    const { engine, name, lockKey, ownerId } = this;
    return { engine, kind: 'lock', name, lockKey, ownerId, mode: 'exclusive', need: 1, total: 1, crossProcess: false };
  }

  /** @internal Waiters retry after a pause with jitter; the masters' room lets shutdown cancel them. */
  get room(): WaitRoom {
    return this.masters;
  }

  /** @internal */
  get waitChannel(): string {
    return this.lockKey;
  }

  /** @internal No release message reaches a RedLock waiter: it sleeps, then tries again. */
  readonly wakesOnRelease = false;
  /** @internal */
  readonly maxSleepMs = Number.POSITIVE_INFINITY;
  /** @internal Independent masters, no replicas to confirm. */
  readonly replicaKey = undefined;

  /** @internal */
  seatsFirst(): boolean {
    return false;
  }

  /**
   * @internal One round of the algorithm: ask every master, keep the lock only with a majority in
   * time, and write the token back to a majority. Busy: the pause before the next round (random, so
   * contenders do not keep colliding). `LockUnavailableError` when too few masters answered.
   */
  async attempt(leaseMs: number): Promise<AttemptOutcome> {
    const traffic = this.traffic();
    traffic.attempts += 1;
    let out = true;
    try {
      const outcome = await this.round(leaseMs, traffic);
      out = typeof outcome === 'object' && !(outcome instanceof LockUnavailableError);
      return outcome;
    } catch (error) {
      out = false;
      throw error;
    } finally {
      if (!out) this.attemptOver(traffic);
    }
  }

  private traffic(): OwnerTraffic {
    return ownerTraffic(this.engine, this.lockKey, this.ownerId);
  }

  /** One attempt of the owner is over (see red-lock-traffic.ts). */
  private attemptOver(traffic: OwnerTraffic): void {
    attemptOver(this.engine, this.lockKey, this.ownerId, traffic);
  }

  private async round(leaseMs: number, traffic: OwnerTraffic): Promise<AttemptOutcome> {
    // A re-entry only ever re-arms: also when the body's record went away since the lock asked.
    const heldBefore = this.hold !== undefined || this.reenterOnly;
    const releasesBefore = traffic.releases;
    const startedAt = monotonicNow();
    const { quorum } = this.masters;
    const timeoutMs = this.masters.masterTimeout(leaseMs);
    const { calls } = this;
    const tokens = new Map<RedisClient, number>();
    // Until every master is identified: one INFO each first, so one server never votes twice (an
    // unidentified master's vote does not count, see RedLockMasters.ask).
    await this.masters.identify(timeoutMs);
    let ended = 0;
    const votes = await this.masters.ask(async (client) => {
      const token = await calls.acquire(client, leaseMs, this.ownerId, heldBefore);
      if (token === ENDED) ended += 1;
      if (token === false || token === ENDED) return false;
      tokens.set(client, token);
      return true;
    }, timeoutMs);
    if (heldBefore && ended >= quorum) return this.reentryFoundEnded();
    let granted = votes.yes >= quorum;
    const token = Math.max(0, ...tokens.values());
    if (granted && !heldBefore && calls.fenced) {
      // A re-entry keeps its token; a new hold raises every granting master's fence to the token.
      const raised = await this.masters.ask(async (client) => tokens.has(client) && (await calls.fence(client, token, this.ownerId)), timeoutMs);
      granted = raised.yes >= quorum;
    }
    // A release of this owner sent during the round may have reached a master after its grant there.
    if (traffic.releases !== releasesBefore) granted = false;
    // The lease began when the first master was asked, not when the last answered.
    if (granted && leaseMs - (monotonicNow() - startedAt) - leaseDriftMs(leaseMs) > 0) {
      return { fencingToken: calls.fenced ? token : undefined, leaseStartedAt: startedAt };
    }
    // A failed first attempt lets go of whatever it got; a failed re-entry keeps the hold it had
    // (the watchdog or the lease decides about that one).
    // Not while the owner holds it now, nor while another of its attempts may be granted: the
    // release takes every hold of the owner (the last attempt out, or the holder's unlock, lets go).
    if (!heldBefore && this.hold === undefined && traffic.attempts === 1) await this.releaseEverywhere();
    if (votes.failed > this.masters.clients.length - quorum) {
      return this.unavailable(votes.firstError ?? new Error(REDLOCK_NO_MAJORITY(this.name, votes.yes, this.masters.clients.length, quorum)));
    }
    return RETRY_DELAY_MS + Math.random() * RETRY_JITTER_MS;
  }

  /**
   * A re-arm found the owner holding nothing on a majority: the hold this process counts ended there
   * (deleted, flushed, a master restarted) and is never taken again as a re-entry. Its bodies are
   * told; a re-entry-only lock (a body's chain asking through it) rejects, so it asks as an owner of
   * its own; the owner's own object tries again as a new hold after the pause
   * (docs/owners-and-reentry.md#the-owner-model).
   */
  private reentryFoundEnded(): AttemptOutcome {
    const hold = this.engine.holds.get(this.lockKey, this.ownerId);
    if (hold) this.reentryEnded(hold);
    if (this.reenterOnly) throw new ReentryEndedError(this.name);
    return RETRY_DELAY_MS + Math.random() * RETRY_JITTER_MS;
  }

  /**
   * @internal Re-entry only: set on the RedLock a body's call chain re-enters through (see
   * `ChainBoundLock`); a majority answering that the owner holds nothing rejects with `ReentryEndedError`.
   */
  reenterOnly = false;

  /** This object's handles: the hold records its acquisitions counted on (docs/owners-and-reentry.md#the-owner-model). */
  private readonly taken = new HandleList(this);

  /** @internal Whether one of this object's handles counts on a hold that ended here. */
  get owesEndedHold(): boolean {
    return this.taken.owesEnded;
  }

  /** @internal `hold` ended on a majority: forgotten here, its bodies told. */
  reentryEnded(hold: HeldLock): void {
    const { holds, logger } = this.engine;
    if (holds.isCurrent(hold)) endHold(holds, hold, LOST_REENTRY_ENDED, logger);
  }

  /** @internal */
  held(grant: Grant, leaseMs: number, options: LockOptions | undefined, grantSentAt: number): boolean {
    this.attemptOver(this.traffic());
    const terms: HoldTerms = {
      leaseMs,
      grantSentAt,
      fencingToken: grant.fencingToken,
      renewal: options?.leaseTime === undefined ? { renew: () => this.renew(leaseMs) } : undefined,
      releaseOne: () => this.releaseEverywhere(),
      telemetry: this.engine.telemetry?.holdTelemetry(this.kind, this.name, options),
    };
    this.taken.add(this.engine.holds.acquired(this.name, this.lockKey, this.ownerId, terms));
    return true;
  }

  /** @internal A grant after the caller gave up: a new hold is let go everywhere; a re-entry keeps the hold it had. */
  undoGrant(): Promise<unknown> {
    const traffic = this.traffic();
    this.attemptOver(traffic);
    if (this.hold || traffic.attempts > 0) return Promise.resolve();
    return this.releaseEverywhere().catch(() => undefined);
  }

  /** @internal A failed round has already let go of what it got. */
  abandon(): undefined {
    return undefined;
  }

  /** A majority's yes or no; `LockUnavailableError` when too few masters answered to tell. */
  private majorityAnswer(votes: Votes): boolean {
    const { quorum, clients } = this.masters;
    if (votes.yes >= quorum) return true;
    if (votes.no > clients.length - quorum) return false;
    throw this.unavailable(votes.firstError ?? new Error(REDLOCK_NO_MAJORITY(this.name, votes.yes, clients.length, quorum)));
  }

  private unavailable(cause: unknown): LockUnavailableError {
    return new LockUnavailableError(this.name, cause);
  }

  /** @internal A fresh lease of `leaseMs` from now on a majority (a multi-lock's re-arm); false when lost. */
  async rearm(leaseMs: number): Promise<boolean> {
    const hold = this.hold;
    if (!hold || hold.aborted) return false;
    const sentAt = monotonicNow();
    return (await this.renew(leaseMs)) && this.engine.holds.rearmed(hold, sentAt, leaseMs);
  }

  /**
   * The watchdog's renewal: true while a majority still holds the lock for this owner; false once
   * a majority no longer can (then the minority's leftovers are released too); a rejection when
   * too few masters answered to tell, which the watchdog retries until the lease runs out. `exact`:
   * the lease becomes `leaseMs` (`keepHeldFor`), else a longer one is kept where the layout says so.
   */
  private async renew(leaseMs: number, exact = false): Promise<boolean> {
    const votes = await this.masters.ask((client) => this.calls.renew(client, leaseMs, this.ownerId, exact), this.masters.masterTimeout(leaseMs));
    const { quorum, clients } = this.masters;
    if (votes.yes >= quorum) return true;
    if (votes.no > clients.length - quorum) {
      void this.releaseEverywhere();
      return false;
    }
    throw votes.firstError ?? new LockError(REDLOCK_NO_MAJORITY(this.name, votes.yes, clients.length, quorum));
  }

  /**
   * Releases this owner's lock on every master; resolves once every master answered or timed out
   * (each bounded by the per-master timeout), so after `unlock()` no reachable master still has it.
   */
  private releaseEverywhere(): Promise<Votes> {
    releaseSent(this.engine, this.lockKey, this.ownerId);
    return this.masters.ask(this.calls.release(this.ownerId), this.queryTimeout(), { until: 'all', evenIfDown: true });
  }

  /** Bound of a query or release on one master. */
  private queryTimeout(): number {
    return this.masters.masterTimeout(this.hold?.leaseMs ?? this.engine.options.watchdogTimeout);
  }
}
