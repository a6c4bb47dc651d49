import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockService, ReadWriteLockService, SemaphoreService } from '../../lib';
import { keysWithoutTtl } from '../support/key-audit';
import { createLockApp, sleep } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

/** Settles `start()`'s work or gives up after `ms`: what a hang looks like from outside. A refusal thrown at once counts as settled. */
async function within<T>(ms: number, start: () => Promise<T>): Promise<{ settled: boolean; value?: T; error?: unknown }> {
  let work: Promise<T>;
  try {
    work = start();
  } catch (error) {
    return { settled: true, error };
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<{ settled: boolean }>((resolve) => (timer = setTimeout(() => resolve({ settled: false }), ms)));
  try {
    return await Promise.race([work.then((value) => ({ settled: true, value }), (error: unknown) => ({ settled: true, error })), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Durations are whole milliseconds: a fractional `leaseTime` is rounded up or refused by name, never
 * half-applied (a hold written, then PEXPIRE refused, leaving a key without TTL).
 */
describe('hold model: fractional durations', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, commandTimeout: 1_000 });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('lock({ leaseTime: 1500.5 }) settles: taken (rounded up) or refused naming leaseTime', async () => {
    const lock = app.get(LockService).getLock('fraction-lock');
    const outcome = await within(5_000, () => lock.lock({ leaseTime: 1500.5 }));
    expect(outcome.settled).toBe(true);
    if (outcome.error !== undefined) expect(String((outcome.error as Error).message)).toContain('leaseTime');
    else await lock.unlock();
  });

  it('no path with a fractional leaseTime leaves a key without TTL', async () => {
    const attempts: Array<() => Promise<unknown>> = [
      () => app.get(LockService).getLock('fraction-a').lock({ leaseTime: 1500.5 }),
      () => app.get(LockService).getLock('fraction-b').tryLock({ leaseTime: 250.5 }),
      () => app.get(FairLockService).getLock('fraction-c').tryLock({ leaseTime: 250.5 }),
      () => app.get(ReadWriteLockService).getReadWriteLock('fraction-d').writeLock().tryLock({ leaseTime: 250.5 }),
      () => app.get(ReadWriteLockService).getReadWriteLock('fraction-e').readLock().tryLock({ leaseTime: 250.5 }),
      () => app.get(LockService).run(['fraction-f', 'fraction-g'], () => sleep(10), { leaseTime: 250.5 }),
      () => app.get(SemaphoreService).run('fraction-h', () => sleep(10), { permits: 2, leaseTime: 250.5 }),
    ];
    await Promise.all(attempts.map((attempt) => within(3_000, attempt)));
    expect(await keysWithoutTtl(raw)).toEqual([]);
  });
});
