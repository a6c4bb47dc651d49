import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, type Lock } from '../../lib';
import { RedissonNames } from '../../lib/layouts/redisson-names';
import { createLockApp, sleep } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * Review 2 (issue 33, fair lock in layout 'redisson'): one owner waiting in two flows at once (one
 * lock object shared, or Promise.all inside a run). Redisson's queue holds the owner once. The flow
 * with the shorter wait gives up and runs `acquireFailed`, which takes the owner out of the queue
 * and the deadlines: the other flow still waits, but nobody is queued for it any more, so the
 * holder's release (which wakes only the queue's head, on its own channel) wakes nobody. The other
 * flow sleeps on the TTL it read (the holder's lease, renewed by its watchdog) and misses a free lock.
 */
describe("review 2: layout 'redisson' fair lock, one owner waiting in two flows", () => {
  let redis: TestRedis;
  let raw: Redis;
  let a: TestingModule;
  let b: TestingModule;
  const lockIn = (app: TestingModule, name: string): Lock => app.get(FairLockService).getLock(name);

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    [a, b] = await Promise.all([
      createLockApp({ redis: redis.url, layout: 'redisson', watchdogTimeout: 30_000 }),
      createLockApp({ redis: redis.url, layout: 'redisson', watchdogTimeout: 30_000 }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    raw?.disconnect();
    await redis?.stop();
  });

  it('the flow still waiting gets the lock soon after it is freed', async () => {
    const name = 'review2:fair:shared-owner';
    const holder = lockIn(b, name);
    await holder.lock();
    const shared = lockIn(a, name);
    const short = shared.tryLock({ waitTime: 300 });
    const long = shared.tryLock({ waitTime: 4_000 });
    expect(await short).toBe(false);
    const queueAfterGiveUp = await raw.lrange(RedissonNames.fairQueue(name), 0, -1);
    await sleep(200);
    const freedAt = Date.now();
    await holder.unlock();
    const got = await long;
    const tookMs = Date.now() - freedAt;
    if (got) await shared.unlock();
    expect({ got, soon: tookMs < 1_000, queueAfterGiveUp }).toEqual({ got: true, soon: true, queueAfterGiveUp: [(shared as unknown as { ownerId: string }).ownerId] });
  });
});
