import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { ReadWriteLockService } from '../../lib';
import type { RedissonReadLock } from '../../lib/locks/redisson/redisson-read-lock';
import { LockEngine } from '../../lib/engine/lock-engine';
import { createLockApp, sleep } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';
import { HoldWitness } from '../support/hold-witness';

/**
 * Review 2 (issue 33, read lock in layout 'redisson'): one owner's read holds with different
 * leases (two flows of one call chain, Promise.all, each with its own `leaseTime`) released in
 * another order than they were taken. Redisson's read unlock deletes the timeout key of the highest
 * index (`{N}:<owner>:rwlock_timeout:<count>`) and then sets the hash's TTL to the longest timeout key
 * left. When the long-lease hold was taken second and the short-lease one leaves first, the long key
 * goes and the hash gets the short lease: the remaining hold, which this process counts until its
 * own lease, is gone from Redis once the short one passes, and a writer gets in beside its body.
 */
describe("review 2: layout 'redisson' read holds of one owner released out of order", () => {
  let redis: TestRedis;
  let raw: Redis;
  let one: TestingModule;
  let two: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    [one, two] = await Promise.all([
      createLockApp({ redis: redis.url, layout: 'redisson', watchdogTimeout: 30_000 }),
      createLockApp({ redis: redis.url, layout: 'redisson', watchdogTimeout: 30_000 }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([one?.close(), two?.close()]);
    raw?.disconnect();
    await redis?.stop();
  });

  it('the hold still counted keeps the lock in Redis for its own lease', async () => {
    const name = 'review2:read:lease-order';
    const witness = new HoldWitness();
    const read = one.get(ReadWriteLockService).getReadWriteLock(name).readLock() as RedissonReadLock;
    await read.lock({ leaseTime: 1_500 }); // flow A: key :1, 1.5 s
    await read.lock({ leaseTime: 20_000 }); // flow B: key :2, 20 s
    await read.unlock(); // flow A is done
    const ttlAfter = await raw.pttl(name);
    const hold = one.get(LockEngine).holds.get(read.lockKey, read.ownerId);
    expect(hold).toBeDefined();
    const reader = witness.enter('node-reader', name, hold!.signal, 'shared');
    const writer = two
      .get(ReadWriteLockService)
      .runWrite(name, (ctx) => witness.inside('writer', name, ctx.signal, () => sleep(10)), { waitTime: 4_000 })
      .catch(() => undefined);
    await sleep(3_000);
    witness.exit(reader);
    await read.unlock().catch(() => undefined);
    await writer;
    expect({ ttlAbove2s: ttlAfter > 2_000, violations: witness.violations() }).toEqual({ ttlAbove2s: true, violations: [] });
  });
});
