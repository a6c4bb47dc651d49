import { LockUpgradeError } from '../../errors';
import { LuaScript } from '../../redis/lua-script';
import { RedissonNames } from '../../layouts/redisson-names';
import { REDISSON_NO_TOKEN, REDISSON_REUSED_AS_READ_WRITE } from '../../messages/redisson.messages';
import type { LockEngine } from '../../engine/lock-engine';
import type { WaitKind, WaitMode } from '../../deadlocks/wait-node';
import type { ForceUnlockOptions } from '../lock';
import type { ReadWriteMode } from '../read-write-scripts';
import { RedissonBaseLock } from './redisson-base-lock';

/** redisson-write-acquire.lua: the owner holds only the read lock (waiting would never end). */
export const UPGRADE_REFUSED = -3;
/** redisson-{read,write}-acquire.lua: the key holds a plain lock of the same name. */
const PLAIN_LOCK_THERE = -4;

const forceUnlockScript = LuaScript.named('redisson-rw-force-unlock');

/** Names already logged as holding a plain lock (once per name and process). */
const clashLogged = new Set<string>();

/**
 * What the read and write views of an `RReadWriteLock` share in Redisson's layout
 * (docs/redisson-interop.md#read-write): the hash `N` (`mode`, readers `owner -> count`, the writer
 * `owner:write -> count`), the channel `redisson_rwlock:{N}` (`0` wakes one waiter, `1` all), and
 * the hold identity `rw\nN`. A read hold is recorded for `owner`, a write hold for `owner:write`:
 * different fields, scripts and renewals in Redis, so different hold records here.
 */
export abstract class RedissonReadWriteView extends RedissonBaseLock {
  abstract readonly mode: ReadWriteMode;

  constructor(
    engine: LockEngine,
    name: string,
    identity: string,
    /** The call chain's owner: the reader's field, and the writer's without `:write`. */
    readonly readerOwner: string,
    ownerId: string,
    redisKey: string,
  ) {
    super(engine, name, identity, ownerId, redisKey);
  }

  /** @internal */
  override get waitChannel(): string {
    return RedissonNames.readWriteChannel(this.redisKey);
  }

  /** @internal A reader waits for a writer; a writer for every holder (docs/deadlocks.md). */
  protected override get waitMode(): WaitMode {
    return this.mode;
  }

  protected override get waitKind(): WaitKind {
    return 'readWrite';
  }

  /**
   * A busy answer: the upgrade refusal becomes `LockUpgradeError`; a plain lock of the same name
   * (Redisson would grant a read beside it) is waited out as any holder, and said once.
   */
  protected override busyOutcome(reply: unknown): number {
    const code = Number(reply);
    if (code === UPGRADE_REFUSED) throw new LockUpgradeError(this.name);
    if (code === PLAIN_LOCK_THERE) {
      if (!clashLogged.has(this.redisKey)) {
        clashLogged.add(this.redisKey);
        this.engine.logger.warn(REDISSON_REUSED_AS_READ_WRITE(this.name));
      }
      return -1;
    }
    return code > 0 ? code : -1;
  }

  /** Redisson's `forceUnlock` of this view: deletes the lock only when held in this mode, and wakes its waiters. */
  override async forceUnlock(options?: ForceUnlockOptions): Promise<boolean> {
    if (options?.fencingToken !== undefined) throw new TypeError(REDISSON_NO_TOKEN('forceUnlock'));
    const { engine, redisson } = this;
    await redisson.ready();
    const keys = [this.redisKey, this.waitChannel];
    const args = [this.mode, redisson.publishCommand];
    return (await engine.call(this.name, (ticket) => forceUnlockScript.run(engine.client, keys, args, ticket))) === 1;
  }

  /** No hold of this layout carries a token (docs/redisson-interop.md#fencing). */
  override getFencingToken(): number | undefined {
    return undefined;
  }

  override async getHoldCount(): Promise<number> {
    return Number((await this.engine.call(this.name, () => this.engine.client.hget(this.redisKey, this.ownerId))) ?? 0);
  }
}
