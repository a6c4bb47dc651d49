import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService } from '../lib';
import { createLockApp, waitersQueued } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';

async function evalCalls(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  return [...info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
}

describe('waiting through pub/sub', () => {
  let redis: TestRedis;
  let app: TestingModule;
  let locks: LockService;
  let admin: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    admin = redis.client();
    app = await createLockApp({ redis: redis.url });
    locks = app.get(LockService);
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('a task that releases and asks again queues behind the tasks already waiting (no barging)', async () => {
    const order: string[] = [];
    const holder = locks.getLock('no-barging');
    await holder.lock();
    const waitFor = (id: string) => locks.run('no-barging', async () => void order.push(id), { waitTime: 10_000 });
    const first = waitFor('w1');
    await waitersQueued(app, 1);
    const second = waitFor('w2');
    await waitersQueued(app, 2);
    const waiters = [first, second];
    await holder.unlock();
    await locks.run('no-barging', async () => void order.push('returning'), { waitTime: 10_000 });
    await Promise.all(waiters);
    expect(order).toEqual(['w1', 'w2', 'returning']);
  });

  it('300 waiters on one key drain with a small constant number of scripts per hand-off', async () => {
    const holder = locks.getLock('stampede');
    await holder.lock();
    let inside = 0;
    let overlaps = 0;
    const waiters = Array.from({ length: 300 }, () =>
      locks.run(
        'stampede',
        async () => {
          if (++inside > 1) overlaps++;
          await Promise.resolve();
          inside--;
        },
        { waitTime: 60_000 },
      ),
    );
    await waitersQueued(app, 300);
    const before = await evalCalls(admin);
    await holder.unlock();
    await Promise.all(waiters);
    const perHandOff = ((await evalCalls(admin)) - before) / 300;
    expect(overlaps).toBe(0);
    // Each hand-off: one release, one acquire by the woken waiter, rarely a retry; a stampede would be ~300.
    expect(perHandOff).toBeLessThan(4);
  }, 60_000);
});
