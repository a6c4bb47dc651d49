import type { CallTicket } from '../redis/bounded-call';
import type { HeldLock, HoldTerms } from '../runtime/held-locks';
import { endHold } from '../runtime/hold-registry';
import { cancellable, type Cancellation } from '../runtime/cancellation';
import { observeAcquire } from '../metrics/lock-telemetry';
import { Acquisition } from './acquisition/acquisition';
import type { Grant } from './acquisition/contender';
import { LockContender } from './lock-contender';
import { LockNotHeldError } from '../errors';
import { LOST_NEW_EPISODE, LOST_REENTRY_ENDED } from '../lock.messages';
import { HOLDS_OTHER_MODE, tokenText, type ReleaseResult } from './attempt-results';
import { HoldHandles } from './hold-handles';
import { confirmHandOver } from '../runtime/hand-over';
import { monotonicNow } from '../monotonic-clock';
import type { ForceUnlockOptions, Lock, LockOptions, LockRunContext, TryLockOptions } from './lock';
import { heldLocksOf, runContextOf } from './owned-lock';
import type { RunnableLock } from './runnable-lock';

/**
 * What every single-server lock kind shares: the lock API over its contender (`LockContender`),
 * the holds its grants record for the watchdog, and this object's handles on them (releases name
 * the hold they took; docs/owners-and-reentry.md#the-owner-model). Renewal is cancelled before a
 * release.
 */
export abstract class BaseLock extends LockContender implements Lock, RunnableLock {
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

  /** This object's handles: the holds its acquisitions counted on (docs/owners-and-reentry.md#the-owner-model). */
  private readonly handles = new HoldHandles(this);

  /**
   * Releases one hold this object took (docs/owners-and-reentry.md#the-owner-model): first one owed
   * to an episode that ended (lost: its release names that episode, so Redis never lets it end a
   * later one), else the innermost. An object that took nothing holds nothing: `LockNotHeldError`.
   */
  unlock(): Promise<void> {
    const hold = this.handles.takeForUnlock();
    return hold ? this.handles.release(hold) : Promise.reject(new LockNotHeldError(this.name));
  }

  /** @internal Whether one of this object's handles counts on a hold that ended here (its `unlock` settles that first). */
  get owesEndedHold(): boolean {
    return this.handles.owesEnded;
  }

  /** @internal Whether a release names its episode to Redis (see `HandleOwner`): by fencing token here. */
  get releasesNameEpisode(): boolean {
    return true;
  }

  /** @internal One count of `hold` is about to be released (a read-write view counts its write holds off). */
  releasing(_hold: HeldLock): void {}

  /**
   * @internal One release of one count of `hold`'s episode, as `unlock` sends it (a read-write view
   * may answer "the other mode"). With the hold's fencing token, Redis refuses a release of an ended
   * episode, and tells a first release of the hold's last count from a resent one without reading a
   * release record (lua/reentrant-release.lua).
   */
  releaseEpisode(requestId: string, ticket: CallTicket, hold: HeldLock): Promise<ReleaseResult | typeof HOLDS_OTHER_MODE> {
    return this.releaseOne(requestId, '', ticket, tokenText(hold));
  }

  /** @internal The episode a release of `hold` names to Redis (its fencing token here), if it has one. */
  episodeOf(hold: HeldLock): string | undefined {
    return hold.fencingToken === undefined ? undefined : String(hold.fencingToken);
  }

  /** @internal A re-entry-only attempt found `hold` ended in Redis: forgotten, its bodies told. */
  reentryEnded(hold: HeldLock): void {
    if (this.engine.holds.isCurrent(hold)) this.episodeEnded(hold, LOST_REENTRY_ENDED);
  }

  /**
   * Deletes the lock whoever holds it (or only while the hold with `options.fencingToken` holds
   * it); its waiters in line get it in order (each kind's own script).
   */
  abstract forceUnlock(options?: ForceUnlockOptions): Promise<boolean>;

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

  /**
   * The hold this object's last acquisition counted on while it is current; otherwise the owner's
   * current hold in this process, if any (a read-write view shares its owner's with the other view).
   */
  get hold(): HeldLock | undefined {
    const last = this.handles.last;
    const { holds } = this.engine;
    return last && holds.isCurrent(last) ? last : holds.get(this.lockKey, this.ownerId);
  }

  /** Acquires within `waitMs`: the acquisition machine, with this lock as its contender. */
  protected acquire(waitMs: number, options: LockOptions | undefined, cancellation?: Cancellation): Promise<boolean> {
    return Acquisition.start<boolean>(this, waitMs, false, options, cancellation);
  }

  // What `run` and the decorators need (see `RunnableLock`).

  get runName(): string {
    return this.name;
  }

  heldLocks(): readonly HeldLock[] {
    return heldLocksOf(this);
  }

  runContext(): LockRunContext {
    return runContextOf(this);
  }

  /**
   * `minHoldTime`'s release: the kind's renewal script with `ms` as the lease, in place of the
   * release, so the owner's hold (for a read-write lock, whatever it still holds) expires in Redis by
   * itself; a re-entered hold only drops its count.
   */
  keepHeldFor(ms: number): Promise<void> {
    const hold = this.handles.last;
    const { engine } = this;
    if (!hold || !engine.holds.isCurrent(hold) || hold.holdCount > 1) return this.unlock();
    // Forgotten first, as a release does: the watchdog must not renew it past `ms` meanwhile.
    const exact = this.mayShortenOnKeep();
    this.handles.takeLast();
    this.releasing(hold);
    engine.holds.released(hold);
    const { script, keys, args } = this.renewalCall(ms, exact, hold.fencingToken);
    return engine.call(this.name, (ticket) => script.run(engine.client, keys, args, ticket)).then((renewed) => {
      if (renewed !== 1) throw new LockNotHeldError(this.name);
    });
  }

  /**
   * Whether `keepHeldFor` may set the lease to exactly its `ms` (shortening it). A kind whose holds
   * of one owner share one TTL says no while another grant of the owner is on its way (its key must
   * keep that grant's lease): the renewal is then extend-only.
   */
  protected mayShortenOnKeep(): boolean {
    return true;
  }

  /**
   * @internal A fresh lease of `leaseMs` for this owner's hold, from now (a multi-lock re-arms the
   * members it took first once the last is granted). False when Redis or this process no longer has
   * the hold.
   */
  rearm(leaseMs: number): Promise<boolean> {
    const { engine } = this;
    const hold = this.hold;
    if (!hold || hold.aborted) return Promise.resolve(false);
    const { script, keys, args } = this.renewalCall(leaseMs, false, hold.fencingToken);
    const sentAt = monotonicNow();
    return engine
      .call(this.name, (ticket) => script.run(engine.client, keys, args, ticket))
      .then((renewed) => renewed === 1 && engine.holds.rearmed(hold, sentAt, leaseMs));
  }

  /** @internal Records the hold (the watchdog renews it unless a `leaseTime` was given) as this object's handle. */
  held(grant: Grant, leaseMs: number, options: LockOptions | undefined, grantSentAt: number): boolean {
    const leaseTime = options?.leaseTime;
    const terms: HoldTerms = {
      leaseMs,
      grantSentAt,
      fencingToken: grant.fencingToken,
      renewal: leaseTime === undefined ? { client: this.engine.client, call: this.renewalCall(leaseMs, false, grant.fencingToken) } : undefined,
      releaseOne: () => this.releaseAnyHold(),
      telemetry: this.engine.telemetry?.holdTelemetry(this.kind, this.name, options),
      grantedLeaseMs: grant.grantedLeaseMs,
    };
    this.endedEpisodeFound(grant.fencingToken);
    const hold = this.engine.holds.acquired(this.name, this.lockKey, this.ownerId, terms);
    this.handles.add(hold);
    if (grant.grantedLeaseMs !== undefined) confirmHandOver(this.engine, this.name, hold, leaseMs, this.renewalCall(leaseMs, false, grant.fencingToken));
    return true;
  }

  /**
   * A re-entry keeps its hold's fencing token; a grant with another token started a new episode in
   * Redis: the hold this process still counts had ended there (deleted, flushed, lost in a restart)
   * before the watchdog could tell, so its bodies ran unprotected. They are told now (the hold's
   * signal aborts) and the hold is forgotten: the grant starts a hold record of its own, and the
   * handles of the ended one name the ended episode, which Redis refuses to release
   * (docs/owners-and-reentry.md#the-owner-model), so no release of a told body ends the new one.
   */
  protected endedEpisodeFound(grantedToken: number | undefined): void {
    const { holds } = this.engine;
    const counted = holds.get(this.lockKey, this.ownerId);
    if (!counted || grantedToken === undefined || counted.fencingToken === undefined || counted.fencingToken === grantedToken) return;
    this.episodeEnded(counted, LOST_NEW_EPISODE);
  }

  /** `hold` ended in Redis: forgotten here, and every body counting on it told. */
  protected episodeEnded(hold: HeldLock, reason: string): void {
    endHold(this.engine.holds, hold, reason, this.engine.logger);
  }

}
