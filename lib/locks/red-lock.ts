import { LockError, LockNotHeldError } from '../errors';
import { releaseSent } from './red-lock-traffic';
import { REDLOCK_NO_MAJORITY } from '../lock.messages';
import type { HeldLock } from '../runtime/held-locks';
import { Acquisition } from './acquisition/acquisition';
import { observeAcquire } from '../metrics/lock-telemetry';
import { cancellable, type Cancellation } from '../runtime/cancellation';
import type { ForceUnlockOptions, LockOptions, LockRunContext, TryLockOptions } from './lock';
import type { OwnedLock } from './owned-lock';
import { heldLocksOf, runContextOf } from './owned-lock';
import { monotonicNow } from '../monotonic-clock';
import { RedLockContender } from './red-lock-round';

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
 *
 * Its layers: the masters and their majority (red-lock-quorum.ts), one round of the algorithm as an
 * acquisition's contender (red-lock-round.ts), and here the lock's API.
 */
export class RedLock extends RedLockContender implements OwnedLock {
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

  /** @internal A fresh lease of `leaseMs` from now on a majority (a multi-lock's re-arm); false when lost. */
  async rearm(leaseMs: number): Promise<boolean> {
    const hold = this.hold;
    if (!hold || hold.aborted) return false;
    const sentAt = monotonicNow();
    return (await this.renew(leaseMs)) && this.engine.holds.rearmed(hold, sentAt, leaseMs);
  }
}
