import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { SemaphoreService } from '../../lib';
import { LockEngine } from '../../lib/engine/lock-engine';
import { LuaScript } from '../../lib/redis/lua-script';
import { createLockApp, sleep } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';
import { DelayRelay } from '../support/delay-relay';
import { HoldWitness } from '../support/hold-witness';

/**
 * Review (issue 33): `redisson-pes-acquire` answers 'OK' when the acquisition's first permit id is
 * leased already (an earlier attempt of the same acquisition that granted, whose answer was lost).
 * The machine then counts the lease from the *later* attempt's send time, while the permit's
 * deadline in Redis was written by the earlier one: the local lease outlives the Redis deadline by
 * the gap between the two attempts (at least `commandTimeout`). A fixed `leaseTime` (or renewals
 * that fail) then lets another holder reclaim the permit while this body's signal is still live.
 */
describe("review: layout 'redisson' semaphore, a resent acquire's 'OK' dates the lease from the wrong attempt", () => {
  let redis: TestRedis;
  let relay: DelayRelay;
  let slow: TestingModule;
  let other: TestingModule;
  let raw: Redis;
  const sems = (m: TestingModule) => m.get(SemaphoreService);

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    relay = await DelayRelay.start(redis.port, 0);
    slow = await createLockApp({ redis: relay.url, layout: 'redisson', commandTimeout: 200 });
    other = await createLockApp({ redis: redis.url, layout: 'redisson' });
  });
  afterAll(async () => {
    await slow?.close();
    await other?.close();
    await relay?.stop();
    await redis?.stop();
  });

  it('the permit is not taken by another holder while the first holder signal is live', async () => {
    const name = 'review:pes:1';
    const witness = new HoldWitness();
    // The first attempt reaches Redis (and is answered) 260 ms late: it times out at 200 ms, grants,
    // and the next attempt (sent at ~250 ms, behind it on the wire) finds its id leased: 'OK'.
    const client = slow.get(LockEngine).client as unknown as Redis;
    const acquireSha = LuaScript.named('redisson-pes-acquire').sha;
    const original = client.evalsha;
    await relay.setDelay(260);
    client.evalsha = function (this: Redis, ...args: unknown[]) {
      const result = (original as (...a: unknown[]) => unknown).apply(this, args);
      if (args[0] === acquireSha) {
        client.evalsha = original;
        setTimeout(() => void relay.setDelay(0), 30);
      }
      return result;
    } as typeof client.evalsha;
    const permit = await sems(slow).getSemaphore(name, { permits: 1 }).tryAcquire({ waitTime: 5_000, leaseTime: 1_000 });
    expect(permit).not.toBeNull();
    const first = witness.enter('slow', name, permit!.signal);
    // Another process waits for the permit: it may get it only once the first holder's signal aborted.
    const second = sems(other)
      .getSemaphore(name, { permits: 1 })
      .tryAcquire({ waitTime: 5_000 })
      .then((p) => {
        if (p) witness.exit(witness.enter('other', name, p.signal));
        return p;
      });
    const got = await second;
    await sleep(300);
    witness.exit(first);
    expect(got).not.toBeNull();
    expect(witness.violations()).toEqual([]);
    await got?.release();
    await permit!.release().catch(() => undefined);
    expect(await raw.get(name)).toBeDefined();
  });
});
