import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { ReadWriteLockService } from '../../lib';
import type { BaseLock } from '../../lib/locks/base-lock';
import { createLockApp, sleep } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';
import { DelayRelay } from '../support/delay-relay';

/**
 * Review 3 (issue 33): the read lock's `keepHeldFor` (minHoldTime) sets the owner's timeout keys and
 * the hash to exactly `ms`. A re-entry of the same owner whose attempt reached Redis first is then
 * recorded with its full lease while its keys die at `ms`; a writer of another process gets in.
 */
describe("review3: layout 'redisson' read lock minHoldTime release against a re-entry in flight", () => {
  let redis: TestRedis;
  let relay: DelayRelay;
  let slow: TestingModule;
  let other: TestingModule;
  let raw: Redis;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    relay = await DelayRelay.start(redis.port, 20);
    slow = await createLockApp({ redis: relay.url, layout: 'redisson', watchdogTimeout: 30_000 });
    other = await createLockApp({ redis: redis.url, layout: 'redisson', watchdogTimeout: 30_000 });
  });
  afterAll(async () => {
    await slow?.close();
    await other?.close();
    raw?.disconnect();
    await relay?.stop();
    await redis?.stop();
  });

  it("the re-entered read hold keeps its lease in Redis", async () => {
    const name = 'review3:read:keep';
    const read = slow.get(ReadWriteLockService).getReadWriteLock(name).readLock() as unknown as BaseLock;
    expect(await read.tryLock({ waitTime: 0, leaseTime: 10_000 })).toBe(true);
    const reentry = read.tryLock({ waitTime: 2_000, leaseTime: 10_000 });
    await sleep(5);
    await read.keepHeldFor(300).catch(() => undefined);
    expect(await reentry).toBe(true);
    await sleep(600);
    const pttl = await raw.pttl(name);
    const writer = other.get(ReadWriteLockService).getReadWriteLock(name).writeLock();
    const writerGot = await writer.tryLock({ waitTime: 0, leaseTime: 5_000 });
    if (writerGot) await writer.unlock();
    await read.unlock().catch(() => undefined);
    expect({ alive: pttl > 5_000, writerGot }).toEqual({ alive: true, writerGot: false });
  }, 20_000);
});
