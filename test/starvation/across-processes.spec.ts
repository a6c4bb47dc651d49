import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { ReadWriteLockService, SemaphoreService } from '../../lib';
import { completion, printed, spawnFixture } from '../support/child-process';
import { deadGranteeDelay } from '../support/dead-grantee';
import { createLockApp, sleep } from '../support/lock-app';
import { startRedis, TestRedis } from '../support/redis-server';

/** Short, so a dead waiter's grant lease (the waiter timeout at most) is short too. */
const WAITER_TIMEOUT_MS = 1_000;
const HOLD_MS = 20;

/**
 * The read-write lock and the semaphore across real processes (the plain and fair locks' are in
 * lock-handoff.spec.ts): children loop on the lock (test/fixtures/hot-loop.ts) and count their rounds
 * in Redis; this process asks in between and must get in within a bounded number of them.
 */
describe('no waiter starves across processes: read-write lock and semaphore', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let other: TestingModule;
  let seq = 0;
  const fresh = () => `starve-process-${++seq}`;
  const childRounds = async (name: string) => Number(await raw.get(`rounds:${name}:child`));

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, fairLockWaiterTimeout: WAITER_TIMEOUT_MS });
    other = await createLockApp({ redis: redis.url, fairLockWaiterTimeout: WAITER_TIMEOUT_MS });
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await redis?.stop();
  });

  it('a writer gets in between two processes whose reads overlap, within a few of their rounds', async () => {
    const name = fresh();
    const readers = [0, 1].map(() => spawnFixture('hot-loop', [redis.url, 'read', name, 'loop', '4000', String(HOLD_MS)]));
    const done = readers.map(completion);
    await Promise.all(readers.map((child) => printed(child, 'looping')));
    const waited: number[] = [];
    for (let i = 0; i < 5; i++) {
      const askedAt = await childRounds(name);
      await app.get(ReadWriteLockService).runWrite(name, async () => {
        waited.push((await childRounds(name)) - askedAt);
        await sleep(HOLD_MS);
      }, { waitTime: 3_000 });
    }
    const afterWrites = await childRounds(name);
    await Promise.all(done);
    // The reads in progress when the writer asked finish (one round of each reader, perhaps one more
    // on its way), nothing after them.
    expect(Math.max(...waited)).toBeLessThanOrEqual(4);
    expect(await childRounds(name)).toBeGreaterThan(afterWrites); // the readers went on
  }, 30_000);

  it('a process looping on a one-permit semaphore lets this one in within a few of its rounds, losing no update', async () => {
    const name = fresh();
    const child = spawnFixture('hot-loop', [redis.url, 'semaphore', name, 'loop', '4000', String(HOLD_MS)]);
    const done = completion(child);
    await printed(child, 'looping');
    const waited: number[] = [];
    for (let i = 0; i < 5; i++) {
      const askedAt = await childRounds(name);
      await app.get(SemaphoreService).run(name, async () => {
        waited.push((await childRounds(name)) - askedAt);
        const value = Number((await raw.get(`counter:${name}`)) ?? 0);
        await sleep(HOLD_MS);
        await raw.set(`counter:${name}`, value + 1);
      }, { permits: 1, waitTime: 3_000 });
    }
    const out = await done;
    const total = Number(/rounds (\d+)/.exec(out)?.[1]);
    expect(Math.max(...waited)).toBeLessThanOrEqual(4); // the round in progress, those while it subscribed
    expect(total).toBeGreaterThan(5);
    expect(Number(await raw.get(`counter:${name}`))).toBe(total + 5);
  }, 30_000);

  it('a writer handed the lock that dies before hearing of it blocks the next writer for at most the grant lease', async () => {
    const name = fresh();
    const reader = app.get(ReadWriteLockService).getReadWriteLock(name).readLock();
    await reader.lock();
    const delay = await deadGranteeDelay({
      fixtureArgs: [redis.url, 'write', name, 'wait', '0', '0'],
      lineLength: () => raw.llen(`lock:rw:{${name}}:line`),
      next: other.get(ReadWriteLockService).getReadWriteLock(name).writeLock(),
      release: () => reader.unlock(),
      handedToChild: async () => expect(await raw.hget(`lock:rw:{${name}}`, 'mode')).toBe('write'),
    });
    expect(delay).toBeLessThan(WAITER_TIMEOUT_MS + 2_000);
  }, 40_000);
});
