import { LuaScript, type ScriptCall } from '../../redis/lua-script';
import { RedissonNames, writerField } from '../../layouts/redisson-names';
import type { LockEngine } from '../../engine/lock-engine';
import { RedissonReadWriteView } from './redisson-read-write-view';

const scripts = {
  acquire: LuaScript.named('redisson-read-acquire'),
  unlock: LuaScript.named('redisson-read-unlock'),
  renew: LuaScript.named('redisson-read-renew'),
  isLocked: LuaScript.named('redisson-read-is-locked'),
};

/**
 * `readLock()` of an `RReadWriteLock` in Redisson's layout (docs/redisson-interop.md#read-write).
 * Each read hold k of the owner has its key `{N}:<owner>:rwlock_timeout:<k>` with the lease as TTL,
 * and any client's read unlock sets the hash's TTL to the longest of those keys (or deletes it when
 * none lives): so this owner's watchdog renews its own keys, or a Java reader leaving would take
 * the Node reader's hold with it.
 */
export class RedissonReadLock extends RedissonReadWriteView {
  readonly kind = 'read' as const;
  readonly mode = 'read' as const;
  private readonly timeoutPrefix: string;
  private readonly keyPrefix: string;

  constructor(engine: LockEngine, name: string, identity: string, owner: string, redisKey: string) {
    super(engine, name, identity, owner, owner, redisKey);
    this.timeoutPrefix = RedissonNames.readTimeoutPrefix(redisKey, owner);
    this.keyPrefix = RedissonNames.readKeyPrefix(redisKey);
  }

  protected acquireCall(leaseMs: number): ScriptCall {
    return { script: scripts.acquire, keys: [this.redisKey, this.timeoutPrefix], args: [leaseMs, this.ownerId, writerField(this.ownerId)] };
  }

  protected unlockCall(latchKey: string, latchTtlMs: number, guard: string): ScriptCall {
    return {
      script: scripts.unlock,
      keys: [this.redisKey, this.waitChannel, this.timeoutPrefix, this.keyPrefix, latchKey],
      args: [this.ownerId, this.redisson.publishCommand, latchTtlMs, guard],
    };
  }

  /** Redisson's read renewal for this owner: its timeout keys 1..count and the hash, extend-only. */
  protected renewalCall(leaseMs: number, exact = false): ScriptCall {
    return { script: scripts.renew, keys: [this.redisKey, this.timeoutPrefix, this.keyPrefix], args: [leaseMs, this.ownerId, exact ? 0 : 1] };
  }

  /** Redisson's `readLock().isLocked()`: read mode, or a reader beside the writer. */
  override async isLocked(): Promise<boolean> {
    const { engine } = this;
    return (await engine.call(this.name, (ticket) => scripts.isLocked.run(engine.client, [this.redisKey], [], ticket))) === 1;
  }
}
