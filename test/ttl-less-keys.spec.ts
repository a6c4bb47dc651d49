import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockService, ReadWriteLockService, SemaphoreService, type Lock } from '../lib';
import { createLockApp } from './support/lock-app';
import { startRedis, type TestRedis } from './support/redis-server';

/**
 * A lock key without a TTL (an operator's PERSIST, a foreign client) gives waiters no time to wait
 * for: they must back off, not poll (once, 3 waiters ran 1,874 scripts in one second: each slept
 * max(PTTL -1, 1) = 1 ms between attempts). A release still wakes them through its message.
 */
describe('waiters on a lock key without a TTL back off', () => {
  const WAITERS = 3;
  const WAIT_MS = 1_000;
  /** A generous bound: backing off costs a handful of attempts per waiter and second; polling cost hundreds. */
  const MAX_SCRIPTS = 100;

  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let holder: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url });
    holder = await createLockApp({ redis: redis.url });
  });

  afterAll(async () => {
    await app?.close();
    await holder?.close();
    await redis?.stop();
  });

  /** Scripts the server ran so far (EVALSHA and EVAL calls, INFO commandstats). */
  async function scriptsRun(): Promise<number> {
    const stats = await raw.info('commandstats');
    let calls = 0;
    for (const match of stats.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(match[1]);
    return calls;
  }

  /** Every key of `name`, made TTL-less. */
  async function persistAll(name: string): Promise<void> {
    const keys = (await raw.keys(`*${name}*`)).filter((key) => !key.endsWith(':fence'));
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) await raw.persist(key);
    for (const key of keys) expect(await raw.pttl(key)).toBe(-1);
  }

  /** Runs WAITERS bounded waits at once; answers how many scripts the server ran meanwhile, and their outcomes. */
  async function waitersOn(name: string, attempt: () => Promise<unknown>): Promise<{ scripts: number; outcomes: unknown[] }> {
    await persistAll(name);
    const before = await scriptsRun();
    const outcomes = await Promise.all(Array.from({ length: WAITERS }, () => attempt().catch((e: unknown) => e)));
    return { scripts: (await scriptsRun()) - before, outcomes };
  }

  const kinds: Array<[string, (moduleRef: TestingModule, name: string) => Lock]> = [
    ['plain', (moduleRef, name) => moduleRef.get(LockService).getLock(name)],
    ['fair', (moduleRef, name) => moduleRef.get(FairLockService).getLock(name)],
    ['write', (moduleRef, name) => moduleRef.get(ReadWriteLockService).getReadWriteLock(name).writeLock()],
  ];

  it.each(kinds)('%s: 3 waiters for 1 s run fewer than 100 scripts, and each is told no', async (kind, make) => {
    const name = `ttl-less-${kind}`;
    const held = make(holder, name);
    await held.lock();
    try {
      const { scripts, outcomes } = await waitersOn(name, () => make(app, name).tryLock({ waitTime: WAIT_MS }));
      expect(outcomes).toEqual([false, false, false]);
      expect(scripts).toBeLessThan(MAX_SCRIPTS);
    } finally {
      await held.unlock();
    }
  });

  it('read waiters on a write hold without a TTL: fewer than 100 scripts', async () => {
    const name = 'ttl-less-read';
    const held = holder.get(ReadWriteLockService).getReadWriteLock(name).writeLock();
    await held.lock();
    try {
      const { scripts, outcomes } = await waitersOn(name, () =>
        app.get(ReadWriteLockService).getReadWriteLock(name).readLock().tryLock({ waitTime: WAIT_MS }),
      );
      expect(outcomes).toEqual([false, false, false]);
      expect(scripts).toBeLessThan(MAX_SCRIPTS);
    } finally {
      await held.unlock();
    }
  });

  it('semaphore: waiters on permits whose keys have no TTL run fewer than 100 scripts', async () => {
    const name = 'ttl-less-sem';
    const permit = await holder.get(SemaphoreService).getSemaphore(name, { permits: 1 }).acquire();
    try {
      const { scripts, outcomes } = await waitersOn(name, () =>
        app.get(SemaphoreService).getSemaphore(name, { permits: 1 }).tryAcquire({ waitTime: WAIT_MS }),
      );
      expect(outcomes).toEqual([null, null, null]);
      expect(scripts).toBeLessThan(MAX_SCRIPTS);
    } finally {
      await permit.release();
    }
  });

  it('a release still wakes a waiter backing off from a TTL-less key at once', async () => {
    const name = 'ttl-less-wake';
    const held = holder.get(LockService).getLock(name);
    await held.lock();
    await persistAll(name);
    const waiter = app.get(LockService).getLock(name);
    const waiting = waiter.tryLock({ waitTime: 10_000 });
    // Long enough for the waiter to be well into its back-off.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const released = performance.now();
    await held.unlock();
    expect(await waiting).toBe(true);
    // Woken by the release's message, not by the end of a back-off step (up to a second).
    expect(performance.now() - released).toBeLessThan(500);
    await waiter.unlock();
  });
});
