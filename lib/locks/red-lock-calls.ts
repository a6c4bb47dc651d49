import { LockKeys } from '../redis/lock-keys';
import { LuaScript } from '../redis/lua-script';
import type { RedisClient } from '../redis/redis-client';
import { WAKE_ONE } from '../redis/unlock-messages';
import { forceReleaseToken } from '../validators';
import { attemptResult, REENTRY_ENDED } from './attempt-results';
import type { ForceUnlockOptions } from './lock';

/** A re-arm's answer on a master where the owner holds nothing (see `RedLockCalls.acquire`). */
export const ENDED = 'ended';

/** One question to one master; `RedLockMasters.ask` puts it to all of them. */
export type MasterQuestion = (client: RedisClient) => Promise<boolean>;

/**
 * What a RedLock writes on each of its masters, chosen by the module's layout: the RedLock's
 * algorithm (majority, drift, retries, the process-counted re-entry) is the same whatever the keys
 * look like (docs/lock-kinds.md#redlock).
 */
export interface RedLockCalls {
  /** The lock's key on every master. */
  readonly key: string;
  /** Whether a hold carries a fencing token, raised on the granting masters by `fence`. */
  readonly fenced: boolean;
  /**
   * A first hold (or, with `reentry`, the re-arm of a hold this process counts) on one master: the
   * master's token when granted (0 without tokens), false when another owner holds it, `ENDED` when
   * a re-arm found the owner holding nothing there (the hold ended: never taken as a new one).
   */
  acquire(client: RedisClient, leaseMs: number, ownerId: string, reentry: boolean): Promise<number | false | typeof ENDED>;
  /** Raises a granting master's fence to the RedLock's token (only when `fenced`); true while the owner holds it there. */
  fence(client: RedisClient, token: number, ownerId: string): Promise<boolean>;
  /**
   * The watchdog's renewal on one master, or with `exact` the lease set to `leaseMs` (`minHoldTime`
   * at the last release): true while the owner holds it there.
   */
  renew(client: RedisClient, leaseMs: number, ownerId: string, exact: boolean): Promise<boolean>;
  /** One release of every hold of the owner, for all masters: true on a master where it was deleted. */
  release(ownerId: string): MasterQuestion;
  /** `forceUnlock` for all masters (throws a `TypeError` for options the layout cannot honour): true where deleted. */
  forceRelease(options: ForceUnlockOptions | undefined): MasterQuestion;
}

const scripts = {
  acquire: LuaScript.named('redlock-acquire'),
  fence: LuaScript.named('redlock-fence'),
  release: LuaScript.named('redlock-release'),
  renew: LuaScript.named('reentrant-renew'),
  forceRelease: LuaScript.named('force-release'),
};

/**
 * The native layout's RedLock on one master: the reentrant lock's hash `<keyPrefix>lock:{name}` with
 * count 1 and a `fence` field, and the name's fence key (lua/redlock-*.lua).
 */
export class NativeRedLockCalls implements RedLockCalls {
  readonly fenced = true;

  constructor(
    readonly key: string,
    private readonly fenceMemoryMs: number,
  ) {}

  private get keys(): string[] {
    return [this.key, LockKeys.fence(this.key)];
  }

  async acquire(client: RedisClient, leaseMs: number, ownerId: string, reentry: boolean): Promise<number | false | typeof ENDED> {
    const args = reentry ? [leaseMs, ownerId, this.fenceMemoryMs, 1] : [leaseMs, ownerId, this.fenceMemoryMs];
    const result = attemptResult(await scripts.acquire.run(client, this.keys, args));
    if (result === REENTRY_ENDED) return ENDED;
    return typeof result === 'number' ? false : (result.fencingToken ?? 0);
  }

  async fence(client: RedisClient, token: number, ownerId: string): Promise<boolean> {
    return (await scripts.fence.run(client, this.keys, [token, ownerId, this.fenceMemoryMs])) === 1;
  }

  /** Always the exact lease (the native RedLock's renewal since it exists). */
  async renew(client: RedisClient, leaseMs: number, ownerId: string): Promise<boolean> {
    return (await scripts.renew.run(client, [this.key], [leaseMs, ownerId])) === 1;
  }

  release(ownerId: string): MasterQuestion {
    const keys = [this.key, LockKeys.channel(this.key)];
    return async (client) => (await scripts.release.run(client, keys, [ownerId, WAKE_ONE])) === 1;
  }

  forceRelease(options: ForceUnlockOptions | undefined): MasterQuestion {
    const token = forceReleaseToken('forceUnlock', options?.fencingToken);
    const args = ['publish', WAKE_ONE, ...(token ? [token] : [])];
    const keys = [this.key, LockKeys.channel(this.key)];
    return async (client) => (await scripts.forceRelease.run(client, keys, args)) === 1;
  }
}
