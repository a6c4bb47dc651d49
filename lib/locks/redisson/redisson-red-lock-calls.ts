import { RedissonNames, REDISSON_UNLOCK_MESSAGE } from '../../layouts/redisson-names';
import { REDISSON_NO_TOKEN } from '../../messages/redisson.messages';
import { LuaScript } from '../../redis/lua-script';
import type { RedisClient } from '../../redis/redis-client';
import type { OwnerIds } from '../../runtime/owner-ids';
import type { ForceUnlockOptions } from '../lock';
import { ENDED, type MasterQuestion, type RedLockCalls } from '../red-lock-calls';
import { unlockLatchId } from './unlock-latch';

const scripts = {
  acquire: LuaScript.named('redisson-lock-acquire'),
  renew: LuaScript.named('reentrant-renew'),
  unlock: LuaScript.named('redisson-lock-unlock'),
  forceRelease: LuaScript.named('redisson-force-unlock'),
};

/** RedLock masters are independent standalone servers: Redisson publishes there with PUBLISH. */
const PUBLISH = 'PUBLISH';
/** The unlock's surplus form down to 0: every hold of the owner on that master (our re-entry is counted in the process). */
const ALL_HOLDS = '0';
const ignore = (): undefined => undefined;

/**
 * A RedLock in Redisson's layout (docs/redisson-interop.md#redlock): on each master, exactly what
 * Java's `RedissonRedLock` does there through `getLock(N)`, so the two exclude each other master by
 * master. A first hold is `RLock`'s acquire (`owner -> 1`, the lease as TTL; never fenced: a
 * monotonic RedLock token would need a write-back Redisson never makes); our re-entry stays counted
 * in this process and only re-arms, as the watchdog renews (`HEXISTS` + extend-only `PEXPIRE`);
 * a release is `RLock`'s unlock with its latch, deleting the hash and publishing `0` on
 * `redisson_lock__channel:{N}`.
 */
export class RedissonRedLockCalls implements RedLockCalls {
  readonly fenced = false;

  constructor(
    /** The mapped name: Redisson's key `N`. */
    readonly key: string,
    /** The module instance's ids: an unlock latch's id is its client id's first half, then a request id. */
    private readonly ids: OwnerIds,
    /** How long a latch keeps a release's answer for a resend. */
    private readonly latchTtlMs: number,
  ) {}

  private get channel(): string {
    return RedissonNames.lockChannel(this.key);
  }

  async acquire(client: RedisClient, leaseMs: number, ownerId: string, reentry: boolean): Promise<number | false | typeof ENDED> {
    // A re-arm where the owner holds nothing: its hold ended there (never taken as a new one).
    if (reentry) return (await this.renew(client, leaseMs, ownerId, false)) ? 0 : ENDED;
    // A reply {count} is a grant (count > 1 only when an earlier hold's release never reached this
    // master: the release takes every count); a number is the TTL of another owner's hold.
    const reply = await scripts.acquire.run(client, [this.key, RedissonNames.fenceToken(this.key)], [leaseMs, ownerId, 0]);
    return Array.isArray(reply) ? 0 : false;
  }

  fence(): Promise<boolean> {
    return Promise.resolve(true);
  }

  /** Redisson's renewal (`HEXISTS` + `PEXPIRE`), extend-only unless `exact` (the release that keeps it for `minHoldTime`). */
  async renew(client: RedisClient, leaseMs: number, ownerId: string, exact: boolean): Promise<boolean> {
    return (await scripts.renew.run(client, [this.key], [leaseMs, ownerId, exact ? 0 : 1])) === 1;
  }

  /**
   * Redisson's unlock with one latch for this release on every master (each master is its own
   * server), deleted once answered, as Redisson's client deletes it. `1`: deleted here; `nil`: the
   * owner held nothing here.
   */
  release(ownerId: string): MasterQuestion {
    const latchKey = RedissonNames.unlockLatch(this.key, unlockLatchId(this.ids.clientId, this.ids.nextRequest()));
    const keys = [this.key, this.channel, latchKey];
    const args = [ownerId, PUBLISH, this.latchTtlMs, ALL_HOLDS];
    return async (client) => {
      const outcome = await scripts.unlock.run(client, keys, args);
      client.del(latchKey).catch(ignore);
      return outcome === 1;
    };
  }

  /** Redisson's `forceUnlock` on every master: deletes the hash and publishes `0`. No token is stored to check. */
  forceRelease(options: ForceUnlockOptions | undefined): MasterQuestion {
    if (options?.fencingToken !== undefined) throw new TypeError(REDISSON_NO_TOKEN('forceUnlock'));
    const keys = [this.key, this.channel];
    return async (client) => (await scripts.forceRelease.run(client, keys, [PUBLISH, REDISSON_UNLOCK_MESSAGE])) === 1;
  }
}
