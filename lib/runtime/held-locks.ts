import { type LockError, LockLostError } from '../errors';
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
  /**
   * When the attempt that was granted was sent (monotonic ms): the lease runs from then, not from
   * when the reply was handled (a GC pause or a slow network between the two eats into it).
   */
  readonly grantSentAt: number;
  /**
   * The lease the grant itself began with when it is shorter than `leaseMs`: a lock handed over by
   * a release starts with a short lease, made `leaseMs` once the new holder confirms it.
   */
  readonly grantedLeaseMs?: number;
  /** The acquisition's fencing token (none for a read lock). */
  readonly fencingToken?: number;
  /** Present when the watchdog keeps the lock alive (no `leaseTime`). */
  readonly renewal?: Renewal;
  /** Releases one hold (used at shutdown to let go of what this instance still holds). */
  readonly releaseOne: () => Promise<unknown>;
  /** The hold's metrics (`lock.held`, `lock.hold.duration`, `lock.lost`), when telemetry is on. */
  readonly telemetry?: HoldTelemetry;
}

/**
 * How much earlier than Redis a lease ends locally: the client's and the server's clocks may run at
 * slightly different rates (1% of the lease plus 2 ms, Redlock's drift allowance).
 */
export const leaseDriftMs = (leaseMs: number): number => Math.floor(leaseMs / 100) + 2;

/**
 * One owner's holds of one lock in this process: the local mirror of what Redis granted. Each hold
 * keeps its own lease; Redis keeps the lock as long as the longest (a re-entry, or a read inside a
 * write, never shortens it: see `docs/architecture.md#holds`), so the owner holds it until
 * `expiresAt`, pushed forward by every grant and renewal. The watchdog renews while any hold taken
 * without a `leaseTime` remains.
 */
export class HeldLock {
  holdCount = 0;
  /**
   * A read-write lock's write holds among `holdCount` (the read and write views share one owner's
   * hold): a reader waits for this hold only while it has any (docs/deadlocks.md).
   */
  writeHolds = 0;
  /** A read-write owner's read episode while it holds reads (see `Grant.readEpisode`): what its read releases name. */
  readEpisode: string | undefined;
  /** A semaphore holder's permits (1 for every other kind): which waits need them (docs/deadlocks.md). */
  permits = 1;
  /** How many of the holds the watchdog keeps alive (taken without `leaseTime`). */
  renewedHolds = 0;
  renewal: Renewal | undefined;
  /** The lease a renewal grants (the watchdog's). */
  renewalLeaseMs = 0;
  /** The lease of the latest grant. */
  leaseMs: number;
  readonly releaseOne: () => Promise<unknown>;
  /** The fencing token of the first acquisition: re-entries keep it. */
  fencingToken: number | undefined;
  readonly telemetry: HoldTelemetry | undefined;
  /**
   * When Redis may let the lock go (monotonic ms): the latest end of a grant's or renewal's lease,
   * each counted from when it was sent. Past `expiresAt - leaseDriftMs`, the hold counts as lost.
   */
  expiresAt = 0;
  /** Whether the first hold is watchdog-kept; `stack` holds the re-entries' (innermost last). */
  private firstRenewed = false;
  private stack: boolean[] | undefined;
  /** Whether the hold `released` took off last was watchdog-kept (for `restore`). */
  private lastReleasedRenewed = false;
  /** Ends a hold no renewal keeps alive when its lease ends (armed only then). */
  leaseEndTimer: NodeJS.Timeout | undefined;
  /**
   * A lock a release handed over, whose short grant lease its holder has not made the full lease
   * yet: it ends by its own timer like a hold without renewal (the watchdog's next round may come
   * after the grant lease).
   */
  awaitingConfirmation = false;
  // Created on first use of `signal`: most holds end without anyone looking at it, and an
  // AbortController per acquisition is a measurable share of an uncontended acquire+release.
  private controller: AbortController | undefined;
  private abortedWith: LockError | undefined;

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

  /** Aborted with a `LockError` when the hold stops being sure (lost, or the module shuts down). */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortedWith) this.controller.abort(this.abortedWith);
    }
    return this.controller.signal;
  }

  /** Whether the signal was aborted (lost, or the module shuts down). */
  get aborted(): boolean {
    return this.abortedWith !== undefined;
  }

  /** Whether the lease (less the drift margin) has ended by `at` (monotonic ms). */
  leaseEndedBy(at: number): boolean {
    return at >= this.expiresAt - leaseDriftMs(this.leaseMs);
  }

  /** A grant or a renewal sent at `sentAt` with `leaseMs`: the lock is held until at least its end. */
  extendLease(sentAt: number, leaseMs: number): void {
    const end = sentAt + leaseMs;
    if (end > this.expiresAt) this.expiresAt = end;
  }

  lose(reason: string): LockLostError {
    const error = new LockLostError(this.name, reason);
    this.telemetry?.lost();
    this.abort(error);
    return error;
  }

  /** Aborts the signal (once) without forgetting the hold: shutdown tells bodies before releasing. */
  abort(error: LockError): void {
    if (this.abortedWith) return;
    this.abortedWith = error;
    this.controller?.abort(error);
  }

  /** @internal One more hold with `terms` (see `HeldLocks.acquired`). */
  add(terms: HoldTerms): void {
    const renewed = terms.renewal !== undefined;
    if (renewed) {
      this.renewal = terms.renewal;
      this.renewalLeaseMs = terms.leaseMs;
      this.renewedHolds += 1;
    }
    if (this.holdCount === 0) this.firstRenewed = renewed;
    else (this.stack ??= []).push(renewed);
    this.holdCount += 1;
    this.leaseMs = terms.leaseMs;
    // A write hold taken by an owner that already reads (its read hold has no token) brings one.
    this.fencingToken ??= terms.fencingToken;
    this.extendLease(terms.grantSentAt, terms.grantedLeaseMs ?? terms.leaseMs);
    if (terms.grantedLeaseMs !== undefined) this.awaitingConfirmation = true;
  }

  /** @internal One hold less, the innermost; returns true when none remain. */
  remove(): boolean {
    const renewed = this.stack?.length ? (this.stack.pop() as boolean) : this.firstRenewed;
    this.lastReleasedRenewed = renewed;
    if (renewed) this.renewedHolds -= 1;
    this.holdCount -= 1;
    return this.holdCount <= 0;
  }

  /** @internal Undoes the last `remove`. */
  unremove(): void {
    const renewed = this.lastReleasedRenewed;
    if (renewed) this.renewedHolds += 1;
    if (this.holdCount === 0) this.firstRenewed = renewed;
    else (this.stack ??= []).push(renewed);
    this.holdCount += 1;
  }
}
