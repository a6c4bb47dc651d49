import { LockError, LockNotHeldError } from '../errors';
import { INVALID_TIME, REPLICAS_NOT_SYNCED } from '../lock.messages';
import { LockKeys } from '../redis/lock-keys';
import { waitForReplicas } from '../redis/replica-sync';
import type { ScriptCall } from '../redis/lua-script';
import type { Waiter } from '../redis/unlock-subscriber';
import type { HeldLock, HoldTerms } from '../runtime/held-locks';
import type { LockEngine } from '../runtime/lock-engine';
import type { Lock, LockOptions, TryLockOptions } from './lock';

/** Outcome of one acquisition attempt: `null` when acquired, else how long the lock may stay busy (ms). */
export type AttemptResult = number | null;

/** Outcome of one release: `null` when not held, 0 when holds remain, 1 when released. */
export type ReleaseResult = 0 | 1 | null;

export function checkTime(what: string, value: number | undefined, allowInfinity: boolean): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0 || (!allowInfinity && !Number.isFinite(value))) {
    throw new RangeError(INVALID_TIME(what, value));
  }
}

/**
 * The waiting, holding and releasing every lock kind shares. A kind supplies its scripts through
 * `attempt`, `releaseOne` and `renewalCall`; this class waits on the shared subscriber between
 * attempts (never polling), tracks holds for the watchdog, and cancels renewal before a release.
 */
export abstract class BaseLock implements Lock {
  constructor(
    protected readonly engine: LockEngine,
    readonly name: string,
    /** The Redis key that identifies this lock (and the owner context entry). */
    readonly lockKey: string,
    readonly ownerId: string,
  ) {}

  /** One atomic acquisition attempt. */
  protected abstract attempt(leaseMs: number, requestId: string, joinLine: boolean): Promise<AttemptResult>;
  /** One atomic release of one hold. */
  protected abstract releaseOne(requestId: string): Promise<ReleaseResult>;
  /** The script the watchdog replays to renew this owner's hold. */
  protected abstract renewalCall(leaseMs: number): ScriptCall;

  /** Channel whose unlock messages wake this lock's waiters. */
  protected waitChannel(): string {
    return LockKeys.channel(this.lockKey);
  }

  /** Longest sleep between attempts (a fair lock's waiter must refresh its place in line). */
  protected maxSleepMs(): number {
    return Number.POSITIVE_INFINITY;
  }

  /** Called when a wait gives up without the lock (a fair lock leaves its line). */
  protected async abandonWait(): Promise<void> {}

  /**
   * Whether a newcomer queues behind this process's waiters instead of trying first (no barging).
   * A reader opts out: readers share the lock, so one waiting to write must not park them.
   */
  protected queuesBehindLocalWaiters(): boolean {
    return true;
  }

  /**
   * Releases one hold of this owner at shutdown, whichever object took it (the read and write views
   * of a read-write lock share one owner's hold record).
   */
  protected releaseAnyHold(): Promise<unknown> {
    return this.releaseOne(this.engine.ids.nextRequest());
  }

  async lock(options?: LockOptions): Promise<void> {
    await this.acquire(Number.POSITIVE_INFINITY, options?.leaseTime);
  }

  tryLock(options?: TryLockOptions): Promise<boolean> {
    return this.acquire(options?.waitTime ?? 0, options?.leaseTime);
  }

  async unlock(): Promise<void> {
    const { holds, ids } = this.engine;
    const hold = holds.get(this.lockKey, this.ownerId);
    // Forget the hold first: the watchdog must not renew (resurrect) what is being released.
    if (hold) holds.released(hold);
    const result = await this.releaseOne(ids.nextRequest());
    if (result === null) {
      if (hold) holds.forget(hold);
      throw new LockNotHeldError(this.name);
    }
    if (result === 1 && hold) holds.forget(hold);
  }

  async forceUnlock(): Promise<boolean> {
    return (await this.engine.scripts.forceRelease.run(this.engine.client, [this.lockKey, this.waitChannel()], [
      this.engine.publishCommand,
      this.engine.wakeMessageOnForceUnlock,
    ])) === 1;
  }

  async isLocked(): Promise<boolean> {
    return (await this.engine.client.exists(this.lockKey)) === 1;
  }

  async isHeldByCurrentOwner(): Promise<boolean> {
    return (await this.engine.client.hexists(this.lockKey, this.ownerId)) === 1;
  }

  async getHoldCount(): Promise<number> {
    return Number((await this.engine.client.hget(this.lockKey, this.ownerId)) ?? 0);
  }

  remainTimeToLive(): Promise<number> {
    return this.engine.client.pttl(this.lockKey);
  }

  /** The current owner's hold in this process, if any. */
  get hold(): HeldLock | undefined {
    return this.engine.holds.get(this.lockKey, this.ownerId);
  }

  /** Acquires within `waitMs` (Infinity: no limit); resolves false on timeout. */
  protected async acquire(waitMs: number, leaseTime: number | undefined): Promise<boolean> {
    checkTime('waitTime', waitMs, true);
    checkTime('leaseTime', leaseTime, false);
    if (leaseTime === 0) throw new RangeError(INVALID_TIME('leaseTime (> 0)', leaseTime));
    const leaseMs = leaseTime ?? this.engine.options.watchdogTimeout;
    const requestId = this.engine.ids.nextRequest();
    const started = Date.now();

    // No barging: while other callers of this process already wait for the lock, a newcomer (that
    // does not hold it already) queues behind them instead of snatching each release, so a task that
    // releases and asks again cannot starve the others.
    let queueFirst =
      waitMs > 0 && !this.hold && this.queuesBehindLocalWaiters() && this.engine.subscriber.hasWaiters(this.waitChannel());
    // waitTime 0 is one attempt, and a fair lock's single attempt never joins the line.
    if (!queueFirst && (await this.attempt(leaseMs, requestId, waitMs > 0)) === null) return await this.held(leaseMs, leaseTime);
    if (waitMs <= 0) return false;

    const deadline = started + waitMs;
    let waiter: Waiter | undefined;
    let acquired = false;
    try {
      // Subscribe, then try again at once: a release may have happened before the subscription.
      waiter = await this.engine.subscriber.join(this.waitChannel());
      for (;;) {
        // A queued newcomer does not know the TTL yet: it sleeps at most one watchdog lease first.
        const busyFor = queueFirst ? this.engine.options.watchdogTimeout : await this.attempt(leaseMs, requestId, true);
        queueFirst = false;
        if (busyFor === null) {
          acquired = true;
          return await this.held(leaseMs, leaseTime);
        }
        const remaining = deadline - Date.now();
        if (remaining <= 0) return false;
        // A missed message never stalls a waiter: every sleep ends by the lock's TTL or the deadline.
        await waiter.sleep(Math.max(1, Math.min(busyFor > 0 ? busyFor : 1, remaining, this.maxSleepMs())));
      }
    } finally {
      if (waiter) this.engine.subscriber.leave(waiter, acquired);
      if (!acquired) await this.abandonWait().catch(() => undefined);
    }
  }

  private async held(leaseMs: number, leaseTime: number | undefined): Promise<true> {
    if (this.engine.options.syncReplicas > 0) await this.confirmReplicated();
    const terms: HoldTerms = {
      leaseMs,
      renewal: leaseTime === undefined ? { client: this.engine.client, call: this.renewalCall(leaseMs) } : undefined,
      releaseOne: () => this.releaseAnyHold(),
    };
    this.engine.holds.acquired(this.name, this.lockKey, this.ownerId, terms);
    return true;
  }

  /**
   * `syncReplicas`: waits until that many replicas have the acquisition, so a failover is less
   * likely to lose it; when fewer confirm in time, lets go of it again and fails.
   */
  private async confirmReplicated(): Promise<void> {
    const { syncReplicas, syncReplicasTimeout } = this.engine.options;
    const confirmed = await waitForReplicas(this.engine.client, this.lockKey, syncReplicas, syncReplicasTimeout);
    if (confirmed >= syncReplicas) return;
    await this.releaseOne(this.engine.ids.nextRequest()).catch(() => undefined);
    throw new LockError(REPLICAS_NOT_SYNCED(this.name, confirmed, syncReplicas, syncReplicasTimeout));
  }
}
