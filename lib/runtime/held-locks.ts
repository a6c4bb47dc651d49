import { LockLostError } from '../errors';
import type { ScriptCall } from '../redis/lua-script';
import type { RedisClient } from '../redis/redis-client';
import type { HoldTelemetry } from '../metrics/lock-telemetry';

/** How the watchdog renews a hold: one script call, batched with the others on the same client. */
export interface ScriptRenewal {
  readonly client: RedisClient;
  readonly call: ScriptCall;
}

/**
 * A renewal of its own, for a lock that is not one key on one server (a RedLock asks several
 * masters): resolves true when renewed, false when the lock is gone; a rejection leaves the outcome
 * open, and the watchdog retries it until the lease runs out.
 */
export interface CustomRenewal {
  readonly renew: () => Promise<boolean>;
}

export type Renewal = ScriptRenewal | CustomRenewal;

/** What a lock kind says about a successful acquisition. */
export interface HoldTerms {
  readonly leaseMs: number;
  /** The acquisition's fencing token (none for a read lock). */
  readonly fencingToken?: number;
  /** Present when the watchdog keeps the lock alive (no `leaseTime`). */
  readonly renewal?: Renewal;
  /** Releases one hold (used at shutdown to let go of what this instance still holds). */
  readonly releaseOne: () => Promise<unknown>;
  /** The hold's metrics (`lock.held`, `lock.hold.duration`, `lock.lost`), when telemetry is on. */
  readonly telemetry?: HoldTelemetry;
}

/** One owner's holds of one lock in this process: the local mirror of the Redis hold count. */
export class HeldLock {
  holdCount = 0;
  renewal: Renewal | undefined;
  leaseMs: number;
  readonly releaseOne: () => Promise<unknown>;
  /** The fencing token of the first acquisition: re-entries keep it. */
  fencingToken: number | undefined;
  readonly telemetry: HoldTelemetry | undefined;
  /** When the lease last started (acquire or renewal); the lock is gone after `+ leaseMs`. */
  leaseStartedAt = Date.now();
  // Created on first use of `signal`: most holds end without anyone looking at it, and an
  // AbortController per acquisition is a measurable share of an uncontended acquire+release.
  private controller: AbortController | undefined;
  private lostWith: LockLostError | undefined;

  constructor(
    readonly name: string,
    readonly lockKey: string,
    readonly ownerId: string,
    terms: HoldTerms,
  ) {
    this.leaseMs = terms.leaseMs;
    this.fencingToken = terms.fencingToken;
    this.renewal = terms.renewal;
    this.releaseOne = terms.releaseOne;
    this.telemetry = terms.telemetry;
  }

  /** Aborted with a `LockLostError` when the library learns the lock was lost. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.lostWith) this.controller.abort(this.lostWith);
    }
    return this.controller.signal;
  }

  lose(reason: string): LockLostError {
    const error = new LockLostError(this.name, reason);
    this.lostWith = error;
    this.telemetry?.lost();
    this.controller?.abort(error);
    return error;
  }
}

/**
 * Every hold of a module instance, keyed by lock and owner: lock key -> owner id -> hold. Two map
 * levels rather than one `lockKey + owner` key, so a lookup (several per acquire+release) hashes
 * strings V8 has already hashed instead of building and hashing a new one.
 */
export class HeldLocks {
  private readonly holds = new Map<string, Map<string, HeldLock>>();
  private count = 0;
  private onFirstHold: (() => void) | undefined;

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

  /** Records one more hold; a watchdog-kept hold wins over a fixed lease on re-entry. */
  acquired(name: string, lockKey: string, ownerId: string, terms: HoldTerms): HeldLock {
    let hold = this.get(lockKey, ownerId);
    if (!hold) {
      hold = new HeldLock(name, lockKey, ownerId, terms);
      this.add(hold);
    } else {
      if (terms.renewal || !hold.renewal) {
        hold.renewal = terms.renewal;
        hold.leaseMs = terms.leaseMs;
      }
      // A write hold taken by an owner that already reads (its read hold has no token) brings one.
      hold.fencingToken ??= terms.fencingToken;
    }
    hold.leaseStartedAt = Date.now();
    hold.holdCount += 1;
    return hold;
  }

  /**
   * Forgets one hold. Returns true when it was the last one: the hold is then out of the registry,
   * so the watchdog stops renewing it before the caller sends the release.
   */
  released(hold: HeldLock): boolean {
    hold.holdCount -= 1;
    if (hold.holdCount > 0) return false;
    this.forget(hold);
    return true;
  }

  /**
   * Undoes `released` when the release did not apply (a read-write owner asked to release a mode it
   * does not hold while it holds the other one): the hold is counted, and renewed, again.
   */
  restore(hold: HeldLock): void {
    const current = this.get(hold.lockKey, hold.ownerId);
    if (current && current !== hold) {
      current.holdCount += 1;
      return;
    }
    hold.holdCount += 1;
    if (!current) this.add(hold);
  }

  forget(hold: HeldLock): void {
    const owners = this.holds.get(hold.lockKey);
    if (owners?.get(hold.ownerId) !== hold) return;
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

  private add(hold: HeldLock): void {
    let owners = this.holds.get(hold.lockKey);
    if (!owners) this.holds.set(hold.lockKey, (owners = new Map()));
    owners.set(hold.ownerId, hold);
    this.count += 1;
    hold.telemetry?.held();
    if (this.count === 1) this.onFirstHold?.();
  }
}
