import { LockUnavailableError, ReentryEndedError } from '../errors';
import type { OwnerTraffic } from './red-lock-traffic';
import type { HoldTerms } from '../runtime/held-locks';
import type { RedisClient } from '../redis/redis-client';
import type { AttemptOutcome, Contender, Grant, WaitRoom } from './acquisition/contender';
import type { LockOptions } from './lock';
import type { WaitTarget } from '../deadlocks/wait-node';
import { leaseDriftMs } from '../runtime/held-locks';
import { monotonicNow } from '../monotonic-clock';
import { ENDED } from './red-lock-calls';
import { REDLOCK_NO_MAJORITY } from '../lock.messages';
import { RedLockQuorum } from './red-lock-quorum';

/**
 * Waiting for a RedLock retries after a random pause (the Redlock algorithm's jitter, so
 * contenders do not keep colliding) instead of subscribing: a subscription lives on one server, and
 * RedLock must not depend on any one master being up. A hand-off therefore takes up to
 * `RETRY_DELAY_MS + RETRY_JITTER_MS`, not one round trip.
 */
const RETRY_DELAY_MS = 50;
const RETRY_JITTER_MS = 100;

/**
 * The contender's side of a RedLock's acquisition (see `Contender` in acquisition/contender.ts, and
 * `RedLock` in red-lock.ts): one round of the Redlock algorithm per attempt, and the hold a grant
 * records. A re-entry counted in this process only re-arms the lease on the masters.
 */
export abstract class RedLockContender extends RedLockQuorum implements Contender<boolean> {
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
}
