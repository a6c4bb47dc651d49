import { Test } from '@nestjs/testing';
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockModule, LockService, ReadWriteLockService, SemaphoreService, type Lock } from '../lib';
import { checkAcquireTimes } from '../lib/validators';
import { createLockApp } from './support/lock-app';
import { startRedis, type TestRedis } from './support/redis-server';

/**
 * Durations are whole milliseconds. A fractional per-call time is rounded up (Redis's PEXPIRE takes
 * whole milliseconds: `leaseTime: 1500.5` once wrote the hold, then failed its PEXPIRE, leaving a key
 * without a TTL and `lock()` retrying forever); a fractional module option is refused at bootstrap,
 * naming it.
 */

const LEASE = 1500.5;

describe('per-call durations are rounded up to whole milliseconds', () => {
  it('checkAcquireTimes answers waitTime and leaseTime rounded up, Infinity and undefined as given', () => {
    expect(checkAcquireTimes(250.2, LEASE)).toEqual({ waitMs: 251, leaseTime: 1501 });
    expect(checkAcquireTimes(Number.POSITIVE_INFINITY, undefined)).toEqual({ waitMs: Number.POSITIVE_INFINITY, leaseTime: undefined });
    expect(checkAcquireTimes(0, 0.25)).toEqual({ waitMs: 0, leaseTime: 1 });
    expect(() => checkAcquireTimes(-0.5, undefined)).toThrow('waitTime must be a non-negative number of milliseconds (got -0.5)');
  });
});

describe('a fractional leaseTime on every kind: held with a TTL, then released', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, redlock: { clients: [redis.url], masterTimeout: 1_000 } });
  });

  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  /** Every key of the test's lock name, with its PTTL (-1: no TTL). */
  async function ttls(name: string): Promise<Record<string, number>> {
    const keys = await raw.keys(`*${name}*`);
    const entries = await Promise.all(keys.map(async (key) => [key, await raw.pttl(key)] as const));
    return Object.fromEntries(entries);
  }

  /** Held: the lock's keys exist, each with a TTL of at most the rounded-up lease. */
  async function expectHeldWithTtl(name: string): Promise<void> {
    const found = await ttls(name);
    expect(Object.keys(found).length).toBeGreaterThan(0);
    for (const [key, ttl] of Object.entries(found)) {
      // Fence keys outlive a hold by design (an hour); every other key lives as long as the lease.
      if (key.endsWith(':fence')) continue;
      expect([key, ttl > 0 && ttl <= 1_501]).toEqual([key, true]);
    }
  }

  const locks: Array<[string, (app: TestingModule, name: string) => Lock]> = [
    ['plain', (a, name) => a.get(LockService).getLock(name)],
    ['fair', (a, name) => a.get(FairLockService).getLock(name)],
    ['read', (a, name) => a.get(ReadWriteLockService).getReadWriteLock(name).readLock()],
    ['write', (a, name) => a.get(ReadWriteLockService).getReadWriteLock(name).writeLock()],
    ['multi', (a, name) => a.get(LockService).getMultiLock(a.get(LockService).getLock(`${name}:a`), a.get(LockService).getLock(`${name}:b`))],
    ['redlock', (a, name) => a.get(LockService).getRedLock(name)],
  ];

  it.each(locks)('%s: tryLock with leaseTime 1500.5 is granted, each key has a TTL, unlock frees it', async (kind, make) => {
    const name = `frac-${kind}`;
    const lock = make(app, name);
    // A bounded wait: a grant whose PEXPIRE failed would retry until this ends, and answer false or reject.
    expect(await lock.tryLock({ waitTime: 3_000, leaseTime: LEASE })).toBe(true);
    await expectHeldWithTtl(name);
    await lock.unlock();
    expect(await lock.isLocked()).toBe(false);
    // What remains (the fence, a release record) expires by itself: no key is left without a TTL.
    const withoutTtl = Object.entries(await ttls(name)).filter(([, ttl]) => ttl === -1);
    expect(withoutTtl).toEqual([]);
  });

  it('lock() with leaseTime 1500.5 resolves (it once retried forever) and the lease ends by itself', async () => {
    const lock = app.get(LockService).getLock('frac-lock');
    await lock.lock({ leaseTime: LEASE });
    await expectHeldWithTtl('frac-lock');
    const other = app.get(LockService).getLock('frac-lock');
    // The lease is about 1.5 s: another owner gets the lock within it plus a generous margin.
    expect(await other.tryLock({ waitTime: 10_000 })).toBe(true);
    await other.unlock();
  });

  it('a semaphore permit with leaseTime 1500.5: granted, its keys have a TTL, release frees it', async () => {
    const semaphore = app.get(SemaphoreService).getSemaphore('frac-sem', { permits: 2 });
    const permit = await semaphore.acquire({ waitTime: 3_000, leaseTime: LEASE });
    await expectHeldWithTtl('frac-sem');
    await permit.release();
    expect(await semaphore.availablePermits()).toBe(2);
  });

  it('run() and runRead/runWrite with leaseTime 1500.5 and waitTime 250.5 run the body and release', async () => {
    expect(await app.get(LockService).run('frac-run', async () => 'ran', { waitTime: 250.5, leaseTime: LEASE })).toBe('ran');
    expect(await app.get(ReadWriteLockService).runRead('frac-run-rw', async () => 'read', { leaseTime: LEASE })).toBe('read');
    expect(await app.get(ReadWriteLockService).runWrite('frac-run-rw', async () => 'wrote', { leaseTime: LEASE })).toBe('wrote');
    expect(await app.get(SemaphoreService).run('frac-run-sem', async () => 'sem', { permits: 1, leaseTime: LEASE })).toBe('sem');
  });
});

describe('a fractional module option fails at bootstrap, naming it', () => {
  it.each([
    'watchdogTimeout',
    'defaultWaitTime',
    'fairLockWaiterTimeout',
    'commandTimeout',
    'syncReplicasTimeout',
    'shutdownTimeout',
  ])('%s: 1500.5', async (option) => {
    // No server at this address: the options are refused before any connection is opened.
    const compiling = Test.createTestingModule({ imports: [LockModule.forRoot({ redis: 'redis://127.0.0.1:1', [option]: 1500.5 })] }).compile();
    await expect(compiling).rejects.toThrow(`LockModule option "${option}" must be a whole number of milliseconds`);
    await expect(compiling).rejects.toThrow('(got 1500.5)');
  });
});
