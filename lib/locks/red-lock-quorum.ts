import { LockError, LockUnavailableError } from '../errors';
import { attemptOver, ownerTraffic, releaseSent, type OwnerTraffic } from './red-lock-traffic';
import { LOST_REENTRY_ENDED, REDLOCK_NO_MAJORITY } from '../lock.messages';
import type { HeldLock } from '../runtime/held-locks';
import { endHold } from '../runtime/hold-registry';
import { HandleList } from './hold-handles';
import type { LockEngine } from '../engine/lock-engine';
import type { RedLockMasters, Votes } from '../runtime/redlock-masters';
import type { RedLockCalls } from './red-lock-calls';

/** Prefix of a RedLock's identity in the owner context and hold registry, apart from a plain lock of the same name. */
const REDLOCK_IDENTITY = 'redlock\n';

/**
 * A RedLock's masters and what a majority of them says (see `RedLock`, red-lock.ts): its key on
 * every master, this process's record of the owner's hold and this object's handles on it, the
 * renewal and release on every master, and the owner's traffic (red-lock-traffic.ts).
 */
export abstract class RedLockQuorum {
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
    protected readonly masters: RedLockMasters,
    readonly name: string,
    /** What the layout writes on each master. */
    protected readonly calls: RedLockCalls,
    readonly ownerId: string,
  ) {
    this.masterKey = calls.key;
    this.lockKey = RedLockQuorum.identity(calls.key);
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

  protected traffic(): OwnerTraffic {
    return ownerTraffic(this.engine, this.lockKey, this.ownerId);
  }

  /** One attempt of the owner is over (see red-lock-traffic.ts). */
  protected attemptOver(traffic: OwnerTraffic): void {
    attemptOver(this.engine, this.lockKey, this.ownerId, traffic);
  }

  /** This object's handles: the hold records its acquisitions counted on (docs/owners-and-reentry.md#the-owner-model). */
  protected readonly taken = new HandleList(this);

  /** @internal Whether one of this object's handles counts on a hold that ended here. */
  get owesEndedHold(): boolean {
    return this.taken.owesEnded;
  }

  /** @internal `hold` ended on a majority: forgotten here, its bodies told. */
  reentryEnded(hold: HeldLock): void {
    const { holds, logger } = this.engine;
    if (holds.isCurrent(hold)) endHold(holds, hold, LOST_REENTRY_ENDED, logger);
  }

  /** A majority's yes or no; `LockUnavailableError` when too few masters answered to tell. */
  protected majorityAnswer(votes: Votes): boolean {
    const { quorum, clients } = this.masters;
    if (votes.yes >= quorum) return true;
    if (votes.no > clients.length - quorum) return false;
    throw this.unavailable(votes.firstError ?? new Error(REDLOCK_NO_MAJORITY(this.name, votes.yes, clients.length, quorum)));
  }

  protected unavailable(cause: unknown): LockUnavailableError {
    return new LockUnavailableError(this.name, cause);
  }

  /**
   * The watchdog's renewal: true while a majority still holds the lock for this owner; false once
   * a majority no longer can (then the minority's leftovers are released too); a rejection when
   * too few masters answered to tell, which the watchdog retries until the lease runs out. `exact`:
   * the lease becomes `leaseMs` (`keepHeldFor`), else a longer one is kept where the layout says so.
   */
  protected async renew(leaseMs: number, exact = false): Promise<boolean> {
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
  protected releaseEverywhere(): Promise<Votes> {
    releaseSent(this.engine, this.lockKey, this.ownerId);
    return this.masters.ask(this.calls.release(this.ownerId), this.queryTimeout(), { until: 'all', evenIfDown: true });
  }

  /** Bound of a query or release on one master. */
  protected queryTimeout(): number {
    return this.masters.masterTimeout(this.hold?.leaseMs ?? this.engine.options.watchdogTimeout);
  }
}
