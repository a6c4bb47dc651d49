import type { LoggerService } from '@nestjs/common';
import { LOCK_LOST } from '../lock.messages';
import { monotonicNow } from '../monotonic-clock';
import { HeldLock, leaseDriftMs, type HoldTerms } from './held-locks';

/**
 * Every hold of a module instance, keyed by lock and owner: lock key -> owner id -> hold. Two map
 * levels rather than one `lockKey + owner` key, so a lookup (several per acquire+release) hashes
 * strings V8 has already hashed instead of building and hashing a new one.
 */
export class HeldLocks {
  private readonly holds = new Map<string, Map<string, HeldLock>>();
  private count = 0;
  private onFirstHold: (() => void) | undefined;
  private onLeaseEnded: ((hold: HeldLock) => void) | undefined;
  /** How often the watchdog renews (ms): a kept hold with less lease than two rounds left ends by its own timer. */
  private renewalIntervalMs = 0;

  /** Called when the registry goes from empty to holding something (starts the watchdog). */
  whenFirstHeld(callback: () => void): void {
    this.onFirstHold = callback;
  }

  get size(): number {
    return this.count;
  }

  get(lockKey: string, ownerId: string): HeldLock | undefined {
    return this.holds.get(lockKey)?.get(ownerId);
  }

  /** This process's holders of `lockKey` (owner id -> hold), if any. */
  holdersOf(lockKey: string): ReadonlyMap<string, HeldLock> | undefined {
    return this.holds.get(lockKey);
  }

  /**
   * Called when a hold reaches the end of its lease with no renewal to keep it: one that no renewal
   * keeps alive, or a watchdog-kept one (renewed every `renewalIntervalMs`) that was granted with
   * too little lease left for the next round to renew it in time.
   */
  whenLeaseEnds(callback: (hold: HeldLock) => void, renewalIntervalMs = 0): void {
    this.onLeaseEnded = callback;
    this.renewalIntervalMs = renewalIntervalMs;
  }

  /** Records one more hold (with its own lease: see `HeldLock`). */
  acquired(name: string, lockKey: string, ownerId: string, terms: HoldTerms): HeldLock {
    let hold = this.get(lockKey, ownerId);
    if (!hold) {
      hold = new HeldLock(name, lockKey, ownerId, terms);
      this.add(hold);
    }
    hold.add(terms);
    this.leaseChanged(hold);
    return hold;
  }

  /**
   * Forgets one hold. Returns true when it was the last one: the hold is then out of the registry,
   * so the watchdog stops renewing it before the caller sends the release.
   */
  released(hold: HeldLock): boolean {
    if (!hold.remove()) {
      this.leaseChanged(hold);
      return false;
    }
    this.forget(hold);
    return true;
  }

  /**
   * Undoes `released` when the release did not apply (a read-write owner asked to release a mode it
   * does not hold while it holds the other one): the hold is counted, and renewed, again.
   */
  restore(hold: HeldLock): boolean {
    const current = this.get(hold.lockKey, hold.ownerId);
    // A later episode's record replaced it meanwhile: that one counts only its own holds.
    if (current && current !== hold) return false;
    hold.unremove();
    if (!current) this.add(hold);
    this.leaseChanged(hold);
    return true;
  }

  /**
   * A fresh lease of `leaseMs` for `hold`, sent at `sentAt`, that Redis granted (a multi-lock's
   * re-arm): false when the hold ended here meanwhile (released, lost, or its signal aborted).
   */
  rearmed(hold: HeldLock, sentAt: number, leaseMs: number): boolean {
    if (!this.isCurrent(hold) || hold.aborted) return false;
    hold.extendLease(sentAt, leaseMs);
    this.leaseChanged(hold);
    return true;
  }

  /**
   * A renewal with `hold`'s full lease, sent at `sentAt`, that Redis applied (a watchdog round, or
   * the confirmation of a lock a release handed over): the lease runs on from then, and a hold that
   * awaited its confirmation no longer ends with the short grant lease.
   */
  renewed(hold: HeldLock, sentAt: number, leaseMs: number): void {
    hold.extendLease(sentAt, leaseMs);
    if (!hold.awaitingConfirmation && hold.leaseEndTimer === undefined) return;
    hold.awaitingConfirmation = false;
    this.leaseChanged(hold);
  }

  forget(hold: HeldLock): void {
    const owners = this.holds.get(hold.lockKey);
    if (owners?.get(hold.ownerId) !== hold) return;
    clearTimeout(hold.leaseEndTimer);
    hold.leaseEndTimer = undefined;
    owners.delete(hold.ownerId);
    if (owners.size === 0) this.holds.delete(hold.lockKey);
    this.count -= 1;
    hold.telemetry?.ended();
  }

  isCurrent(hold: HeldLock): boolean {
    return this.get(hold.lockKey, hold.ownerId) === hold;
  }

  all(): HeldLock[] {
    const all: HeldLock[] = [];
    for (const owners of this.holds.values()) for (const hold of owners.values()) all.push(hold);
    return all;
  }

  /**
   * A hold that no renewal keeps alive ends locally at its lease's end (less the drift margin), so
   * its signal aborts before Redis lets the next owner in, not at the watchdog's next round. So does
   * a watchdog-kept hold with less than two rounds of lease left (a grant handled late: a stalled
   * event loop between the attempt's write and its reply ate most of the lease, which runs from the
   * send): the next round may come after Redis let the lease end. A renewal that gets through
   * re-arms it (`renewed`), and in the usual case (a grant handled within a trip, a round every third
   * of the lease) no timer is armed at all.
   */
  leaseChanged(hold: HeldLock): void {
    clearTimeout(hold.leaseEndTimer);
    hold.leaseEndTimer = undefined;
    if (!this.onLeaseEnded) return;
    const ms = hold.expiresAt - leaseDriftMs(hold.leaseMs) - monotonicNow();
    if (hold.renewedHolds > 0 && !hold.awaitingConfirmation && ms >= 2 * this.renewalIntervalMs) return;
    const onLeaseEnded = this.onLeaseEnded;
    hold.leaseEndTimer = setTimeout(() => {
      hold.leaseEndTimer = undefined;
      if (this.isCurrent(hold)) onLeaseEnded(hold);
    }, Math.max(0, Math.ceil(ms)));
    hold.leaseEndTimer.unref?.();
  }

  private add(hold: HeldLock): void {
    let owners = this.holds.get(hold.lockKey);
    if (!owners) this.holds.set(hold.lockKey, (owners = new Map()));
    owners.set(hold.ownerId, hold);
    this.count += 1;
    hold.telemetry?.held();
    if (this.count === 1) this.onFirstHold?.();
  }
}

/**
 * A hold that ended in Redis (lost, found gone, its episode over): out of the registry (nothing
 * renews it), and its signal aborts with `LockLostError` (once), warned unless `warn` is false.
 */
export function endHold(holds: HeldLocks, hold: HeldLock, reason: string, logger: Pick<LoggerService, 'warn'>, warn = true): void {
  holds.forget(hold);
  if (hold.aborted) return;
  hold.lose(reason);
  if (warn) logger.warn(LOCK_LOST(hold.name, reason));
}
