import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, type Lock } from '../../lib';
import { RedissonNames } from '../../lib/layouts/redisson-names';
import { createLockApp } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

/**
 * What the Redisson-layout fair lock adds to the lock contract (test/redisson/fair-lock-contract.spec.ts):
 * Redisson's queue and deadlines as Java reads them (docs/redisson-interop.md#fair-lock).
 */
describe('fair lock in layout redisson', () => {
  let redis: TestRedis;
  let raw: Redis;
  let a: TestingModule;
  let b: TestingModule;
  let n = 0;
  const fresh = () => `rfair-${++n}`;
  const queueOf = (name: string) => RedissonNames.fairQueue(name);
  const deadlinesOf = async (name: string): Promise<number[]> =>
    ((await raw.zrange(RedissonNames.fairTimeouts(name), 0, -1, 'WITHSCORES')) as string[]).filter((_, i) => i % 2 === 1).map(Number);
  const queued = (name: string, count: number) =>
    waitFor(async () => (await raw.llen(queueOf(name))) === count, { what: `${count} waiter(s) in ${queueOf(name)}` });

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    [a, b] = await Promise.all([createLockApp({ redis: redis.url, layout: 'redisson' }), createLockApp({ redis: redis.url, layout: 'redisson' })]);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await redis?.stop();
  });

  const lockIn = (app: TestingModule, name: string): Lock => app.get(FairLockService).getLock(name);

  it('grants waiters of two modules in the order they queued', async () => {
    const name = fresh();
    const holder = lockIn(a, name);
    await holder.lock();
    const order: string[] = [];
    const waiters = [lockIn(b, name), lockIn(a, name), lockIn(b, name), lockIn(a, name)];
    const done: Array<Promise<void>> = [];
    for (const [i, waiter] of waiters.entries()) {
      done.push(
        waiter.lock().then(async () => {
          order.push(`w${i}`);
          await waiter.unlock();
        }),
      );
      await queued(name, i + 1);
    }
    expect(order).toEqual([]);
    await holder.unlock();
    await Promise.all(done);
    expect(order).toEqual(['w0', 'w1', 'w2', 'w3']);
    expect(await raw.exists(name, queueOf(name), RedissonNames.fairTimeouts(name))).toBe(0);
  });

  it('a queued deadline is now + the time to wait + wait: the call\'s waitTime, else fairLockWaiterTimeout (300 s)', async () => {
    const name = fresh();
    const holder = lockIn(a, name);
    await holder.lock({ leaseTime: 60_000 });
    const before = Date.now();
    const bounded = lockIn(b, name).tryLock({ waitTime: 20_000 });
    await queued(name, 1);
    const [first] = await deadlinesOf(name);
    // the lock's TTL (≤ 60 s) plus 20 s, from a `now` taken between `before` and here
    expect(first).toBeGreaterThan(before + 60_000 + 20_000 - 5_000);
    expect(first).toBeLessThanOrEqual(Date.now() + 60_000 + 20_000);
    const unbounded = lockIn(b, name).lock();
    await queued(name, 2);
    const [, second] = await deadlinesOf(name);
    expect(second).toBe(first + 300_000); // behind the last waiter: its deadline + Java's default wait
    await holder.unlock();
    expect(await bounded).toBe(true);
    await lockIn(b, name).forceUnlock(); // the first waiter's hold, so the second one gets it
    await unbounded;
    await lockIn(a, name).forceUnlock();
  });

  it('a wait that times out leaves the queue, and the waiters behind it move its wait earlier', async () => {
    const name = fresh();
    const holder = lockIn(a, name);
    await holder.lock();
    const short = lockIn(b, name).tryLock({ waitTime: 300 });
    await queued(name, 1);
    const behind = lockIn(a, name).tryLock({ waitTime: 30_000 });
    await queued(name, 2);
    const [, before] = await deadlinesOf(name);
    expect(await short).toBe(false);
    expect(await raw.llen(queueOf(name))).toBe(1);
    expect(await deadlinesOf(name)).toEqual([before - 300]);
    await holder.unlock();
    expect(await behind).toBe(true);
    await lockIn(a, name).forceUnlock();
  });

  it('a cancelled wait leaves the queue', async () => {
    const name = fresh();
    const holder = lockIn(a, name);
    await holder.lock();
    const controller = new AbortController();
    const waiting = lockIn(b, name).lock({ signal: controller.signal });
    await queued(name, 1);
    controller.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
    await waitFor(async () => (await raw.exists(queueOf(name), RedissonNames.fairTimeouts(name))) === 0, { what: 'the queue to empty' });
    await holder.unlock();
  });

  it('waitTime 0 tries once and never queues', async () => {
    const name = fresh();
    const holder = lockIn(a, name);
    await holder.lock();
    expect(await lockIn(b, name).tryLock({ waitTime: 0 })).toBe(false);
    expect(await raw.exists(queueOf(name), RedissonNames.fairTimeouts(name))).toBe(0);
    await holder.unlock();
    const taker = lockIn(b, name);
    expect(await taker.tryLock({ waitTime: 0 })).toBe(true);
    expect(Object.values(await raw.hgetall(name))).toEqual(['1']);
    await taker.unlock();
  });
});
