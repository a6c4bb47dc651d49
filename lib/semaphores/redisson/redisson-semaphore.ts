import { REDISSON_NO_TOKEN } from '../../messages/redisson.messages';
import { RedissonNames } from '../../layouts/redisson-names';
import type { Contender } from '../../locks/acquisition/contender';
import { LuaScript } from '../../redis/lua-script';
import type { LockEngine } from '../../engine/lock-engine';
import type { Permit } from '../permit';
import { Semaphore } from '../semaphore';
import type { AcquireOptions, SemaphoreForceReleaseOptions, SemaphoreInfo } from '../semaphore.options';
import type { RedissonRuntime } from '../../layouts/redisson-runtime';
import { permitIdsOf, RedissonPermitRequest } from './redisson-permit-request';

const scripts = {
  release: LuaScript.named('redisson-pes-release'),
  renew: LuaScript.named('redisson-pes-renew'),
  read: LuaScript.named('redisson-pes-read'),
};

/**
 * A semaphore in layout 'redisson': Java Redisson's RPermitExpirableSemaphore of the same name
 * (docs/redisson-interop.md#semaphores). The counter `N` holds the permits available (shared with
 * Java's RSemaphore), each permit is a 16-byte id leased in `{N}:timeout` until a deadline on the
 * holder's clock, and `redisson_sc:{N}` carries the new count. Waiters are woken by it and retry; a
 * dead holder's permits come back when its deadline passes (any acquire reclaims them).
 */
export class RedissonSemaphore extends Semaphore {
  /** `N`: the mapped name, Redisson's counter key. */
  readonly redisKey: string;
  readonly timeoutKey: string;
  readonly channel: string;
  /** Ours: marks `N` as a permit counter this layout created or took over (docs/redisson-interop.md#semaphores). */
  readonly markerKey: string;

  /** @internal The engine's Redisson runtime: name mapper, publish command (read per call: the start's probe decides it). */
  readonly redisson: RedissonRuntime;

  constructor(engine: LockEngine, name: string, permits: number) {
    super(engine, name, permits);
    this.redisson = engine.redisson as RedissonRuntime;
    this.redisKey = this.redisson.mapName(name);
    this.timeoutKey = RedissonNames.semaphoreTimeouts(this.redisKey);
    this.channel = RedissonNames.semaphoreChannel(this.redisKey);
    this.markerKey = RedissonNames.permitMarker(this.redisKey);
  }

  /** @internal This semaphore's key in the hold registry: not `N`, which a lock of the same name uses too. */
  override get holdKey(): string {
    return `sem\n${this.redisKey}`;
  }

  /** @internal `minHoldTime`: the permits' deadline set to `ms` from now; they go back by themselves then. */
  override keepPermitFor(permit: Permit, ms: number): Promise<boolean> {
    const ids = permitIdsOf(permit);
    return ids ? this.renewIds(ids, ms, true) : Promise.resolve(false);
  }

  /** Permits free now: Redis's counter plus leases past their deadline (the next acquire reclaims them). */
  override async availablePermits(): Promise<number> {
    const [available] = await this.readPes(true);
    return available ?? this.permits;
  }

  override async inspect(): Promise<SemaphoreInfo> {
    const [available, live, holders, serverTime] = await this.readPes();
    const now = Date.now();
    const info: SemaphoreInfo = {
      name: this.name,
      kind: 'semaphore',
      permits: available === undefined ? undefined : available + live,
      available,
      serverTime,
      holders: [],
      waiters: [],
    };
    for (let i = 0; i < holders.length; i += 2) {
      const deadline = Number(holders[i + 1]);
      if (deadline <= now) continue;
      (info.holders as unknown[]).push({ ownerId: holders[i], permits: 1, ttl: deadline - now, fencingToken: 0 });
    }
    return info;
  }

  /** Not in this layout: Redisson's permits carry no token to make a force release conditional. */
  override forceRelease(_holder: SemaphoreForceReleaseOptions): Promise<boolean> {
    return Promise.reject(new TypeError(REDISSON_NO_TOKEN('forceRelease')));
  }

  /** @internal Not used in this layout: a Permit gives back its own ids (`giveBackIds`). */
  override giveBack(): Promise<number | null> {
    return Promise.resolve(null);
  }

  /**
   * Gives back one acquisition's permits: 1 when all of them were leased and in time, 0 when they
   * were not (released already, or reclaimed after their deadline).
   */
  giveBackIds(ids: readonly Buffer[]): Promise<number> {
    const { engine } = this;
    // No ticket: a release is safe to apply late (the ids are unique: a second run finds them gone).
    return engine.call(this.name, () =>
      scripts.release.run(engine.client, [this.redisKey, this.channel, this.timeoutKey], [Date.now(), this.redisson.publishCommand, ...ids]),
    ).then((reply) => (Number(reply) === (ids.length === 1 ? 1 : ids.length) ? 1 : 0));
  }

  /**
   * Moves the permits' deadline to `leaseMs` from now (only later unless `exact`): true when they were
   * all still leased, false when they were reclaimed.
   */
  renewIds(ids: readonly Buffer[], leaseMs: number, exact: boolean): Promise<boolean> {
    const { engine } = this;
    return engine.call(this.name, (ticket) => {
      const now = Date.now();
      const keys = [this.redisKey, this.timeoutKey, this.channel];
      return scripts.renew.run(engine.client, keys, [now + Math.ceil(leaseMs), now, this.redisson.publishCommand, exact ? 1 : 0, ...ids], ticket);
    }).then((reply) => Number(reply) === 1);
  }

  /** [available (undefined: never set up), live leases, [hex id, deadline, ...], server time]. */
  private readPes(countsOnly = false): Promise<[number | undefined, number, string[], number]> {
    const { engine } = this;
    return engine.call(this.name, async (ticket) => {
      const args = [Date.now(), countsOnly ? 1 : 0];
      const reply = (await scripts.read.run(engine.client, [this.redisKey, this.timeoutKey], args, ticket)) as [unknown, unknown, string[], unknown];
      const available = reply[0] === null || reply[0] === undefined ? undefined : Number(reply[0]);
      return [available, Number(reply[1]), reply[2] ?? [], Number(reply[3])];
    });
  }

  /** A request whose ids are made once, checked before any is. */
  protected override request(options: AcquireOptions | undefined): Contender<Permit | null> {
    return new RedissonPermitRequest(this, this.checkTake(options));
  }
}
