import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { DistributedLock, FairLockService, LockService, ReadWriteLockService, SemaphoreService } from '../lib';
import { LockEngine } from '../lib/engine/lock-engine';
import { CapturedLogs, createFaultApp } from './faults/fault-app';
import { createLockApp, waitUntil } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';

@Injectable()
class Orders {
  runs = 0;
  @DistributedLock('rt-order:#id')
  async pay(id: string): Promise<string> {
    this.runs += 1;
    return `paid ${id}`;
  }
}

/**
 * A locked call resolves as soon as its body settles: the release goes out on the command
 * connection and is not waited for. What the same module sends next follows it there, so it sees
 * the lock released; shutdown waits for releases in flight.
 */
describe('one round trip per locked call', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let other: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url }, [Orders]);
    other = await createLockApp({ redis: redis.url });
  });

  afterAll(async () => {
    await app?.close();
    await other?.close();
    await redis?.stop();
  });

  it('the next command of the same module sees the lock released: isLocked, tryLock from another call chain, inspect', async () => {
    const locks = app.get(LockService);
    for (let i = 0; i < 200; i++) {
      const name = `rt:seq:${i % 4}`;
      expect(await locks.run(name, async () => i)).toBe(i);
      expect(await locks.getLock(name).isLocked()).toBe(false);
      // waitTime 0: one attempt, which fails if it ran before the release.
      const next = locks.getLock(name);
      expect(await next.tryLock()).toBe(true);
      await next.unlock();
      expect(await locks.run(name, async () => 'again')).toBe('again');
      expect((await locks.inspect(name)).locked).toBe(false);
    }
  });

  it('every run form and the decorator: the lock is free for the next command once the call resolved', async () => {
    const rw = app.get(ReadWriteLockService);
    const fair = app.get(FairLockService);
    const semaphores = app.get(SemaphoreService);
    const orders = app.get(Orders);
    for (let i = 0; i < 25; i++) {
      await rw.runWrite('rt:rw', async () => undefined);
      expect(await rw.getReadWriteLock('rt:rw').writeLock().isLocked()).toBe(false);
      await rw.runRead('rt:rw', async () => undefined);
      expect(await rw.getReadWriteLock('rt:rw').readLock().isLocked()).toBe(false);
      await fair.run('rt:fair', async () => undefined);
      expect(await fair.getLock('rt:fair').isLocked()).toBe(false);
      await semaphores.run('rt:sem', async () => undefined, { permits: 1 });
      expect(await semaphores.getSemaphore('rt:sem', { permits: 1 }).availablePermits()).toBe(1);
      expect(await orders.pay('7')).toBe('paid 7');
      expect(await app.get(LockService).getLock('rt-order:7').isLocked()).toBe(false);
    }
  });

  it('another module instance on the same Redis acquires right after (woken by the release, whichever reaches Redis first)', async () => {
    const mine = app.get(LockService);
    const theirs = other.get(LockService);
    for (let i = 0; i < 50; i++) {
      await mine.run('rt:other', async () => undefined);
      const lock = theirs.getLock('rt:other');
      expect(await lock.tryLock({ waitTime: 5_000 })).toBe(true);
      await lock.unlock();
    }
  });

  it('a failing body still releases, and the caller gets its error', async () => {
    const locks = app.get(LockService);
    const failure = new Error('body failed');
    await expect(locks.run('rt:fail', async () => Promise.reject(failure))).rejects.toBe(failure);
    expect(await locks.getLock('rt:fail').isLocked()).toBe(false);
    await expect(locks.run('rt:fail-sync', () => { throw failure; })).rejects.toBe(failure);
    expect(await locks.getLock('rt:fail-sync').isLocked()).toBe(false);
  });

  it('minHoldTime: the call resolves at once, and the lock stays held until then', async () => {
    const locks = app.get(LockService);
    await locks.run('rt:min-hold', async () => undefined, { minHoldTime: 5_000 });
    expect(await locks.getLock('rt:min-hold').isLocked()).toBe(true);
    const ttl = await raw.pttl('lock:{rt:min-hold}');
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(5_000);
    expect(await locks.run('rt:min-hold', async () => 'ran', { skipIfLocked: true })).toBeUndefined();
  });

  it('app.close() right after 100 concurrent locked calls leaves no lock behind', async () => {
    const closing = await createLockApp({ redis: redis.url });
    const locks = closing.get(LockService);
    const names = Array.from({ length: 100 }, (_, i) => `rt:close:${i}`);
    const results = await Promise.all(names.map((name, i) => locks.run(name, async () => i)));
    expect(results).toEqual(names.map((_, i) => i));
    await closing.close();
    const held = await Promise.all(names.map((name) => raw.exists(`lock:{${name}}`)));
    expect(held.filter(Boolean)).toHaveLength(0);
  });
});

describe('one round trip: a body still running when the app closes', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    redis = await startRedis();
  });

  afterAll(async () => {
    await redis?.stop();
  });

  it('the shutdown releases its lock; the body settling after it logs no error and leaves nothing held', async () => {
    const { app, logs } = await createFaultApp({ redis: redis.url });
    const locks = app.get(LockService);
    let finish!: () => void;
    const bodyMayFinish = new Promise<void>((resolve) => (finish = resolve));
    let entered!: () => void;
    const bodyEntered = new Promise<void>((resolve) => (entered = resolve));
    const running = locks.run('rt:outlives', async () => {
      entered();
      await bodyMayFinish;
      return 'finished after close';
    });
    await bodyEntered;
    const raw = redis.client();
    try {
      expect(await raw.exists('lock:{rt:outlives}')).toBe(1);
      await app.close();
      // The shutdown released the hold while the body still ran.
      expect(await raw.exists('lock:{rt:outlives}')).toBe(0);
      finish();
      expect(await running).toBe('finished after close');
      expect(app.get(LockEngine).releasesInFlight.size).toBe(0);
      expect(logs.errors).toEqual([]);
      expect(logs.warnings).toEqual([]);
    } finally {
      raw.disconnect();
    }
  });
});

describe('one round trip: a release that fails', () => {
  let redis: TestRedis;
  let app: TestingModule;
  let logs: CapturedLogs;
  const COMMAND_TIMEOUT = 500;

  beforeAll(async () => {
    redis = await startRedis();
    ({ app, logs } = await createFaultApp({ redis: redis.url, commandTimeout: COMMAND_TIMEOUT }));
  });

  afterAll(async () => {
    await redis?.resume();
    await app?.close();
    await redis?.stop();
  });

  it('Redis frozen right after the body: the caller gets its result before the release is answered, the failure is logged', async () => {
    const locks = app.get(LockService);
    const engine = app.get(LockEngine);
    const result = await locks.run('rt:frozen', async () => {
      await redis.pause();
      return 'done';
    });
    // Resolved while Redis is still frozen: the release has not been answered (nor failed) yet.
    expect(result).toBe('done');
    expect(engine.releasesInFlight.size).toBe(1);
    expect(logs.errors).toHaveLength(0);
    await waitUntil(() => logs.errors.some((line) => line.includes('rt:frozen')), 10_000);
    expect(engine.releasesInFlight.size).toBe(0);
    await redis.resume();
    // The release was written before Redis froze: it runs once Redis is back.
    await waitUntil(async () => !(await locks.getLock('rt:frozen').isLocked()), 10_000);
  });
});
