import { LockNotHeldError } from '../errors';
import type { HeldLock } from '../runtime/held-locks';
import type { LockEngine } from '../engine/lock-engine';

/** What permits are given back to: their semaphore (either layout's). */
export interface PermitSource {
  readonly name: string;
  readonly engine: LockEngine;
  /** Gives back the permits of `permitId`: 1 when they were held. */
  giveBack(permitId: string, leaving: boolean): Promise<number | null>;
}

/**
 * Permits taken from a semaphore: held by their own owner id with a lease the watchdog renews (or
 * a fixed `leaseTime`). Release them once, in a `finally`.
 */
export class Permit {
  private released = false;

  constructor(
    private readonly semaphore: PermitSource,
    /** This acquisition's permit id, as `inspect` lists it (`clientId:n`; layout 'redisson': the first id, 32 hex). */
    readonly ownerId: string,
    /** How many permits this acquisition holds. */
    readonly take: number,
    /**
     * Strictly greater than every token handed out before for this semaphore, by any process.
     * 0 in layout 'redisson', whose semaphores keep no token (docs/redisson-interop.md#semaphores):
     * below every real token, so a fenced store never takes it for a newer holder's.
     */
    readonly fencingToken: number,
    private readonly hold: HeldLock,
  ) {}

  /** The name of the semaphore these permits were taken from. */
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
