import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService } from '../../lib';
import { scriptsRun } from '../support/key-audit';
import { createLockApp } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * A lock key without a TTL (an operator's PERSIST, a foreign client) tells waiters nothing about
 * when to look again: they back off instead of polling (today 3 waiters ran ~1,900 scripts a second).
 */
describe('hold model: a lock key without TTL', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let other: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url });
    other = await createLockApp({ redis: redis.url });
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await redis?.stop();
  });

  it('three waiters on a PERSISTed lock run a bounded number of scripts in one second', async () => {
    const name = 'persisted';
    const holder = app.get(LockService).getLock(name);
    await holder.lock();
    expect(await raw.persist(`lock:{${name}}`)).toBe(1);
    const before = await scriptsRun(raw);
    const waits = [1, 2, 3].map(() => other.get(LockService).getLock(name).tryLock({ waitTime: 1_000 }));
    expect(await Promise.all(waits)).toEqual([false, false, false]);
    const ran = (await scriptsRun(raw)) - before;
    // Generous: a back-off of even 50 ms gives ~60; polling gives thousands.
    expect(ran).toBeLessThan(150);
    await holder.unlock();
  });
});
