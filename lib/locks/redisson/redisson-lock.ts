import { LuaScript, type ScriptCall } from '../../redis/lua-script';
import { RedissonNames, REDISSON_UNLOCK_MESSAGE } from '../../layouts/redisson-names';
import { REDISSON_NO_TOKEN } from '../../messages/redisson.messages';
import type { ForceUnlockOptions } from '../lock';
import { RedissonBaseLock } from './redisson-base-lock';

const scripts = {
  acquire: LuaScript.named('redisson-lock-acquire'),
  unlock: LuaScript.named('redisson-lock-unlock'),
  forceRelease: LuaScript.named('redisson-force-unlock'),
};

/**
 * `LockService`'s lock in Redisson's layout: Java's `RLock` (or `RFencedLock` with
 * `redisson.fencedLocks`) of the same name, hash `N` of `owner -> count` with the lease as its TTL,
 * woken by `0` on `redisson_lock__channel:{N}` (docs/redisson-interop.md#plain-lock).
 */
export class RedissonLock extends RedissonBaseLock {
  readonly kind = 'reentrant' as const;

  /** @internal */
  override get waitChannel(): string {
    return RedissonNames.lockChannel(this.redisKey);
  }

  protected acquireCall(leaseMs: number): ScriptCall {
    const fenced = this.redisson.options.fencedLocks;
    return {
      script: scripts.acquire,
      keys: [this.redisKey, RedissonNames.fenceToken(this.redisKey)],
      args: this.reenterOnly ? [leaseMs, this.ownerId, fenced ? 1 : 0, 1] : [leaseMs, this.ownerId, fenced ? 1 : 0],
    };
  }

  protected unlockCall(latchKey: string, latchTtlMs: number, guard: string): ScriptCall {
    return {
      script: scripts.unlock,
      keys: [this.redisKey, this.waitChannel, latchKey],
      args: [this.ownerId, this.redisson.publishCommand, latchTtlMs, guard],
    };
  }

  /** Redisson's watchdog renewal (`HEXISTS` then `PEXPIRE`), never shortening a longer lease. */
  protected renewalCall(leaseMs: number, exact = false): ScriptCall {
    return { script: this.engine.scripts.reentrantRenew, keys: [this.redisKey], args: [leaseMs, this.ownerId, exact ? 0 : 1] };
  }

  /** Redisson's `forceUnlock`: deletes the lock and wakes a waiter. No token is stored to check. */
  override async forceUnlock(options?: ForceUnlockOptions): Promise<boolean> {
    if (options?.fencingToken !== undefined) throw new TypeError(REDISSON_NO_TOKEN('forceUnlock'));
    const { engine } = this;
    await this.redisson.ready();
    const args = [this.redisson.publishCommand, REDISSON_UNLOCK_MESSAGE];
    return (await engine.call(this.name, (ticket) => scripts.forceRelease.run(engine.client, [this.redisKey, this.waitChannel], args, ticket))) === 1;
  }
}
