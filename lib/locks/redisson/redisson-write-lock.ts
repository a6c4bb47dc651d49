import { LockUpgradeError } from '../../errors';
import { LuaScript, type ScriptCall } from '../../redis/lua-script';
import { writerField } from '../../layouts/redisson-names';
import type { LockEngine } from '../../engine/lock-engine';
import type { AttemptOutcome, Grant } from '../acquisition/contender';
import type { LockOptions } from '../lock';
import { RedissonReadWriteView } from './redisson-read-write-view';

const scripts = {
  acquire: LuaScript.named('redisson-write-acquire'),
  unlock: LuaScript.named('redisson-write-unlock'),
};

/**
 * `writeLock()` of an `RReadWriteLock` in Redisson's layout (docs/redisson-interop.md#read-write):
 * field `<owner>:write` of the hash `N`, renewed as an RLock hold is. A read inside the owner's write
 * is granted (its last write release then leaves the lock in read mode: a downgrade); a write asked
 * by an owner holding only reads is refused with `LockUpgradeError` (waiting would never end).
 */
export class RedissonWriteLock extends RedissonReadWriteView {
  readonly kind = 'write' as const;
  readonly mode = 'write' as const;

  constructor(engine: LockEngine, name: string, identity: string, owner: string, redisKey: string) {
    super(engine, name, identity, owner, writerField(owner), redisKey);
  }

  /** @internal Refused at once when this process records a read hold of the owner and no write hold. */
  override attempt(leaseMs: number, requestId: string, joinLine: boolean): Promise<AttemptOutcome> {
    if (!this.hold && this.engine.holds.get(this.lockKey, this.readerOwner)) return Promise.reject(new LockUpgradeError(this.name));
    return super.attempt(leaseMs, requestId, joinLine);
  }

  protected acquireCall(leaseMs: number): ScriptCall {
    return { script: scripts.acquire, keys: [this.redisKey], args: [leaseMs, this.ownerId, this.readerOwner] };
  }

  protected unlockCall(latchKey: string, latchTtlMs: number, guard: string): ScriptCall {
    return {
      script: scripts.unlock,
      keys: [this.redisKey, this.waitChannel, latchKey],
      args: [this.ownerId, this.redisson.publishCommand, latchTtlMs, guard],
    };
  }

  /** Redisson renews a write hold as an RLock hold (`HEXISTS` then `PEXPIRE`), never shortening here. */
  protected renewalCall(leaseMs: number, exact = false): ScriptCall {
    return { script: this.engine.scripts.reentrantRenew, keys: [this.redisKey], args: [leaseMs, this.ownerId, exact ? 0 : 1] };
  }

  /** @internal Counts the write hold for the in-process deadlock check (a reader waits for it). */
  override held(grant: Grant, leaseMs: number, options: LockOptions | undefined, grantSentAt: number): boolean {
    const held = super.held(grant, leaseMs, options, grantSentAt);
    const hold = this.hold;
    if (hold) hold.writeHolds = hold.holdCount;
    return held;
  }

  override unlock(): Promise<void> {
    const hold = this.hold;
    if (hold && hold.writeHolds > 0) hold.writeHolds -= 1;
    return super.unlock();
  }

  /** Redisson's `writeLock().isLocked()`: the hash is in write mode. */
  override async isLocked(): Promise<boolean> {
    return (await this.engine.call(this.name, () => this.engine.client.hget(this.redisKey, 'mode'))) === 'write';
  }
}
