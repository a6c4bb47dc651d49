import { LuaScript, type ScriptCall } from '../../redis/lua-script';
import { RedissonNames } from '../../layouts/redisson-names';
import { REDISSON_NO_TOKEN } from '../../messages/redisson.messages';
import type { CallTicket } from '../../redis/bounded-call';
import type { Cancellation } from '../../runtime/cancellation';
import type { ReleaseResult } from '../attempt-results';
import type { ForceUnlockOptions, LockOptions } from '../lock';
import { RedissonBaseLock } from './redisson-base-lock';

const scripts = {
  tryAcquire: LuaScript.named('redisson-fair-try-acquire'),
  acquire: LuaScript.named('redisson-fair-acquire'),
  acquireFailed: LuaScript.named('redisson-fair-acquire-failed'),
  unlock: LuaScript.named('redisson-fair-unlock'),
  forceUnlock: LuaScript.named('redisson-fair-force-unlock'),
};

const ignore = (): undefined => undefined;

/** `redisson-fair-unlock`'s answer when the lock's hash was missing. */
const LOCK_WAS_MISSING = 2;

/**
 * `FairLockService`'s lock in Redisson's layout: Java's `RFairLock` of the same name
 * (docs/redisson-interop.md#fair-lock). The hash `N` is the plain lock's; waiters queue in
 * `redisson_lock_queue:{N}` with a deadline in `redisson_lock_timeout:{N}` (epoch ms on this host's
 * clock, fixed when they join: no heartbeats), and a release wakes only the queue's head, with `0`
 * on its own channel `redisson_lock__channel:{N}:<owner>`. No fencing token (Redisson writes none).
 */
export class RedissonFairLock extends RedissonBaseLock {
  readonly kind = 'fair' as const;

  /** @internal An acquisition with a wait queues with its first attempt, as Java's `lock()` / `tryLock(wait)`. */
  override readonly joinsLineOnFirstAttempt = true;

  /**
   * Redisson's `wait` of the acquisition running now: its `waitTime` when finite and > 0, else
   * `fairLockWaiterTimeout` (Java's `fairLockWaitTimeout`). The queueing script, the grant's shift
   * of the other deadlines and the give-up must all pass the same value (docs/redisson-interop.md#fair-lock).
   */
  private waitMs: number;

  constructor(engine: RedissonBaseLock['engine'], name: string, identity: string, ownerId: string, redisKey: string) {
    super(engine, name, identity, ownerId, redisKey);
    this.waitMs = engine.options.fairLockWaiterTimeout;
  }

  /** @internal Only this owner's channel: a release wakes the head of the queue alone. */
  override get waitChannel(): string {
    return RedissonNames.fairWaiterChannel(this.redisKey, this.ownerId);
  }

  protected override acquire(waitMs: number, options: LockOptions | undefined, cancellation?: Cancellation): Promise<boolean> {
    this.waitMs = Number.isFinite(waitMs) && waitMs > 0 ? Math.ceil(waitMs) : this.engine.options.fairLockWaiterTimeout;
    return super.acquire(waitMs, options, cancellation);
  }

  private get queueKey(): string {
    return RedissonNames.fairQueue(this.redisKey);
  }

  private get timeoutsKey(): string {
    return RedissonNames.fairTimeouts(this.redisKey);
  }

  /** With a wait (`joinLine`): the queueing script; `waitTime: 0`: the try script, which never queues. */
  protected acquireCall(leaseMs: number, joinLine: boolean): ScriptCall {
    const keys = [this.redisKey, this.queueKey, this.timeoutsKey];
    const now = Date.now();
    return joinLine
      ? { script: scripts.acquire, keys, args: [leaseMs, this.ownerId, this.waitMs, now] }
      : { script: scripts.tryAcquire, keys, args: [leaseMs, this.ownerId, now, this.waitMs] };
  }

  protected unlockCall(latchKey: string, latchTtlMs: number, guard: string): ScriptCall {
    return {
      script: scripts.unlock,
      keys: [this.redisKey, this.queueKey, this.timeoutsKey, RedissonNames.lockChannel(this.redisKey), latchKey],
      args: [this.ownerId, Date.now(), this.redisson.publishCommand, latchTtlMs, guard],
    };
  }

  /**
   * One release; a lock already gone from Redis answers 2 (Redisson's script says "released" there,
   * and wakes the head): for this process it is "not held", as the plain lock's nil.
   */
  protected override releaseOne(requestId: string, grantedBy?: string, ticket?: CallTicket): Promise<ReleaseResult> {
    return super.releaseOne(requestId, grantedBy, ticket).then((result) => ((result as number) === LOCK_WAS_MISSING ? null : result));
  }

  /** Redisson's watchdog renewal (`HEXISTS` then `PEXPIRE`), never shortening a longer lease. */
  protected renewalCall(leaseMs: number, exact = false): ScriptCall {
    return { script: this.engine.scripts.reentrantRenew, keys: [this.redisKey], args: [leaseMs, this.ownerId, exact ? 0 : 1] };
  }

  /**
   * @internal A wait that ends without the lock leaves the queue as Java's `acquireFailed` does (the
   * waiters behind move `wait` earlier); then, when an attempt's outcome is unknown, the surplus
   * unlock takes back what it may have granted. Both on the command connection, after the attempts.
   */
  override abandon(requestId: string, joinedLine: boolean, outcomeUnknown: boolean): Promise<unknown> | undefined {
    if (!joinedLine) return super.abandon(requestId, joinedLine, outcomeUnknown);
    const { engine } = this;
    const leaving = engine
      .call(this.name, (ticket) => scripts.acquireFailed.run(engine.client, [this.queueKey, this.timeoutsKey], [this.ownerId, this.waitMs], ticket))
      .catch(ignore);
    if (outcomeUnknown) void this.takeBackSurplus();
    return leaving;
  }

  /** Redisson's `forceUnlock`: deletes the lock and wakes the queue's head. No token is stored to check. */
  override async forceUnlock(options?: ForceUnlockOptions): Promise<boolean> {
    if (options?.fencingToken !== undefined) throw new TypeError(REDISSON_NO_TOKEN('forceUnlock'));
    const { engine } = this;
    await this.redisson.ready();
    const keys = [this.redisKey, this.queueKey, this.timeoutsKey, RedissonNames.lockChannel(this.redisKey)];
    const args = [Date.now(), this.redisson.publishCommand];
    return (await engine.call(this.name, (ticket) => scripts.forceUnlock.run(engine.client, keys, args, ticket))) === 1;
  }
}
