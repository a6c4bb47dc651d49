import { Logger } from '@nestjs/common';
import calculateSlot from 'cluster-key-slot';
import {
  LOCK_LOST,
  LOST_HAND_OVER_UNCONFIRMED,
  LOST_LEASE_RAN_OUT_UNRENEWED,
  LOST_LEASE_TIME_RAN_OUT,
  LOST_RENEWAL_FOUND_GONE,
  LOST_RENEWALS_FAILED,
  RENEWAL_FAILED,
  RENEWAL_NO_REPLY,
} from '../lock.messages';
import { conflictOf } from '../errors';
import { withTimeout } from '../redis/bounded-call';
import { isNoScript } from '../redis/lua-script';
import { isCluster, type RedisClient } from '../redis/redis-client';
import { leaseDriftMs, type CustomRenewal, type HeldLock, type ScriptRenewal } from './held-locks';
import type { HeldLocks } from './hold-registry';
import { monotonicNow } from '../monotonic-clock';


/**
 * One timer per module instance renews every watchdog-kept hold each `watchdogTimeout / 3`, in one
 * pipelined round trip per client (per slot on a cluster), each batch on its own so a failing shard
 * does not starve the others. A hold without renewal ends by its own timer when its lease runs out
 * (`HeldLocks`), which the watchdog answers like any loss.
 */
export class Watchdog {
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> | undefined;
  private stopped = false;
  /** Run with every round, held locks or not (the instance registration); true when it took. */
  private heartbeat: (() => Promise<boolean>) | undefined;
  /** When the last round ended (health: `watchdogRoundAgeMs`). */
  lastRoundAt: number | undefined;
  /** Since when renewals keep failing (undefined while they succeed): health is down past a lease. */
  failingSince: number | undefined;
  private roundFailed = false;
  /** One timer for the earliest lease end among holds whose last renewal failed. */
  private expiryTimer: NodeJS.Timeout | undefined;
  private expiryAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly holds: HeldLocks,
    private readonly intervalMs: number,
    /** Bound of one round's wait for Redis (never more than the interval, so rounds cannot pile up). */
    private readonly commandTimeout: number,
    private readonly logger: Logger,
  ) {
    holds.whenFirstHeld(() => this.start());
    // A lease-end timer ends a fixed leaseTime (expected: no warning) or a hand-over's short grant
    // lease that no confirmation got through to make the full lease (a fault: warned), or a
    // watchdog-kept hold granted with too little lease left for the next round (a fault: warned).
    holds.whenLeaseEnds((hold) => {
      if (hold.awaitingConfirmation) this.lose(hold, LOST_HAND_OVER_UNCONFIRMED);
      else if (hold.renewedHolds > 0 && hold.renewal) this.lose(hold, LOST_LEASE_RAN_OUT_UNRENEWED);
      else this.lose(hold, LOST_LEASE_TIME_RAN_OUT, false);
    }, intervalMs);
  }

  /** Runs `beat` with every round and keeps the rounds going while nothing is held. */
  startHeartbeat(beat: () => Promise<boolean>): void {
    this.heartbeat = beat;
    this.start();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.expiryTimer);
    this.timer = this.expiryTimer = undefined;
  }

  /** Waits for a renewal round in flight (shutdown). */
  async settle(): Promise<void> {
    await this.round;
  }

  /** One renewal round now; rounds never overlap. */
  renewNow(): Promise<void> {
    this.round ??= this.renewAll().finally(() => {
      this.round = undefined;
      this.lastRoundAt = monotonicNow();
      if (this.holds.size === 0 && !this.heartbeat) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    });
    return this.round;
  }

  private start(): void {
    if (this.stopped || this.timer) return;
    this.timer = setInterval(() => void this.renewNow(), this.intervalMs);
    this.timer.unref();
  }

  private async renewAll(): Promise<void> {
    const now = monotonicNow();
    this.roundFailed = false;
    const batches = new Map<RedisClient, Map<number, HeldLock[]>>();
    const ownRenewals: Promise<void>[] = [];
    for (const hold of this.holds.all()) {
      // A hand-over's short grant lease ended before any confirmation got through: said as such,
      // whether or not the hold has a leaseTime.
      if (hold.awaitingConfirmation && hold.leaseEndedBy(now)) {
        this.lose(hold, LOST_HAND_OVER_UNCONFIRMED);
        continue;
      }
      if (hold.renewedHolds === 0 || !hold.renewal) {
        if (hold.leaseEndedBy(now)) this.lose(hold, LOST_LEASE_TIME_RAN_OUT, false);
        continue;
      }
      // The lease ran out before this round could renew it (the process was paused or stalled, or
      // Redis did not answer in time): another owner may hold the lock now, so it counts as lost
      // whatever a renewal would say.
      if (hold.leaseEndedBy(now)) {
        this.lose(hold, LOST_LEASE_RAN_OUT_UNRENEWED);
        continue;
      }
      if ('renew' in hold.renewal) {
        ownRenewals.push(this.renewOnItsOwn(hold, hold.renewal));
        continue;
      }
      const { client, call } = hold.renewal;
      const slot = isCluster(client) ? calculateSlot(call.keys[0]) : 0;
      let bySlot = batches.get(client);
      if (!bySlot) batches.set(client, (bySlot = new Map()));
      const batch = bySlot.get(slot);
      if (batch) batch.push(hold);
      else bySlot.set(slot, [hold]);
    }
    const work: Promise<void>[] = [];
    for (const [client, bySlot] of batches) {
      for (const batch of bySlot.values()) work.push(this.renewBatch(client, batch));
    }
    const [beat] = await Promise.all([this.heartbeat?.().catch(() => false), ...work, ...ownRenewals]);
    // A round where every renewal (and the heartbeat) got through ends a failing streak.
    if (this.roundFailed) this.failingSince ??= now;
    else if (beat !== false) this.failingSince = undefined;
  }

  /** A hold with a renewal of its own (a RedLock): same outcomes as a batched one, on its own. */
  private async renewOnItsOwn(hold: HeldLock, renewal: CustomRenewal): Promise<void> {
    const startedAt = monotonicNow();
    let renewed: boolean | undefined;
    let failure: unknown;
    try {
      renewed = await renewal.renew();
    } catch (error) {
      failure = error;
    }
    if (!this.holds.isCurrent(hold)) return; // released while the round was in flight
    if (renewed === true) this.holds.renewed(hold, startedAt, hold.renewalLeaseMs);
    else if (renewed === false) this.lose(hold, LOST_RENEWAL_FOUND_GONE);
    else {
      this.roundFailed = true;
      if (hold.leaseEndedBy(monotonicNow())) this.lose(hold, this.failedReason(hold));
      else this.renewalFailed(hold, failure instanceof Error ? failure.message : String(failure));
    }
  }

  private async renewBatch(client: RedisClient, batch: HeldLock[]): Promise<void> {
    const startedAt = monotonicNow();
    let results: Array<[Error | null, unknown]>;
    try {
      const pipeline = client.pipeline();
      for (const hold of batch) {
        const { call } = hold.renewal as ScriptRenewal;
        // Loaded first on this connection if it does not have it yet (a SCRIPT LOAD written ahead).
        call.script.ensureLoaded(client, call.keys);
        pipeline.evalsha(call.script.sha, call.keys.length, ...call.keys, ...call.args);
      }
      results = ((await withTimeout(pipeline.exec(), Math.min(this.intervalMs, this.commandTimeout))) ?? []) as Array<
        [Error | null, unknown]
      >;
    } catch (error) {
      results = batch.map(() => [error as Error, undefined]);
    }
    await Promise.all(
      batch.map(async (hold, i) => {
        let [error, renewed] = results[i] ?? [new Error(RENEWAL_NO_REPLY), undefined];
        // A hold released meanwhile is not resent: a late renewal would undo a `minHoldTime` release,
        // which leaves the lock in place with a shorter expiry.
        if (error && isNoScript(error) && this.holds.isCurrent(hold)) {
          const { call } = hold.renewal as ScriptRenewal;
          try {
            [error, renewed] = [null, await withTimeout(call.script.run(client, call.keys, call.args), this.commandTimeout)];
          } catch (retryError) {
            error = retryError as Error;
          }
        }
        if (!this.holds.isCurrent(hold)) return; // released while the round was in flight
        if (error && conflictOf(hold.name, error)) {
          // The lock's key now holds something else (written over by another client): the hold is
          // gone, and Redis is not failing (health stays up).
          this.lose(hold, LOST_RENEWAL_FOUND_GONE);
        } else if (error) {
          this.roundFailed = true;
          if (hold.leaseEndedBy(monotonicNow())) this.lose(hold, this.failedReason(hold));
          else this.renewalFailed(hold, error.message);
        } else if (renewed === 1) {
          // Redis still had the hold when the renewal ran, so its lease runs on from when it was sent.
          this.holds.renewed(hold, startedAt, hold.renewalLeaseMs);
        } else {
          this.lose(hold, LOST_RENEWAL_FOUND_GONE);
        }
      }),
    );
  }

  /**
   * A renewal failed with lease left: warn, and make sure the hold counts as lost the moment its
   * lease runs out (not a round later) unless a renewal gets through before that.
   */
  private renewalFailed(hold: HeldLock, reason: string): void {
    this.logger.warn(RENEWAL_FAILED(hold.name, reason));
    const at = hold.expiresAt - leaseDriftMs(hold.leaseMs);
    if (this.stopped || at >= this.expiryAt) return;
    clearTimeout(this.expiryTimer);
    this.expiryAt = at;
    this.expiryTimer = setTimeout(() => this.expireOverdue(), Math.max(0, Math.ceil(at - monotonicNow())));
    this.expiryTimer.unref();
  }

  private expireOverdue(): void {
    this.expiryTimer = undefined;
    this.expiryAt = Number.POSITIVE_INFINITY;
    const now = monotonicNow();
    for (const hold of this.holds.all()) {
      if (hold.renewedHolds > 0 && hold.leaseEndedBy(now)) this.lose(hold, this.failedReason(hold));
    }
  }

  /** Why a watchdog hold whose renewals failed is lost: a hand-over never confirmed says so. */
  private failedReason(hold: HeldLock): string {
    return hold.awaitingConfirmation ? LOST_HAND_OVER_UNCONFIRMED : LOST_RENEWALS_FAILED;
  }

  private lose(hold: HeldLock, reason: string, warn = true): void {
    this.holds.forget(hold);
    hold.lose(reason);
    if (warn) this.logger.warn(LOCK_LOST(hold.name, reason));
  }
}
