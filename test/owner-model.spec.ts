import type { TestingModule } from '@nestjs/testing';
import { LockNotHeldError, LockService } from '../lib';
import { createLockApp } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';

describe('owner model (docs/architecture.md#owner-model)', () => {
  let redis: TestRedis;
  let app: TestingModule;
  let locks: LockService;
  beforeAll(async () => {
    redis = await startRedis();
    app = await createLockApp({ redis: redis.url });
    locks = app.get(LockService);
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('getLock inside run binds to the chain owner for a held name, and owns itself for any other', async () => {
    await locks.run('held-by-chain', async () => {
      const same = locks.getLock('held-by-chain');
      expect(await same.isHeldByCurrentOwner()).toBe(true);
      expect(await same.tryLock()).toBe(true); // re-entry, not a deadlock
      expect(await same.getHoldCount()).toBe(2);
      await same.unlock();
      const other = locks.getLock('not-held');
      expect(await other.isHeldByCurrentOwner()).toBe(false);
    });
    expect(await locks.getLock('held-by-chain').isLocked()).toBe(false);
  });

  it('a lock object outside any context owns itself: lock() twice re-enters, two objects exclude', async () => {
    const first = locks.getLock('self-owned');
    const second = locks.getLock('self-owned');
    await first.lock();
    await first.lock();
    expect(await second.tryLock()).toBe(false);
    await expect(second.unlock()).rejects.toBeInstanceOf(LockNotHeldError);
    await first.unlock();
    await first.unlock();
    expect(await second.tryLock()).toBe(true);
    await second.unlock();
  });

  it('the context does not leak to the caller after run returns', async () => {
    await locks.run('scoped', async () => undefined);
    const outside = locks.getLock('scoped');
    await outside.lock();
    // A fresh object made outside the context is another owner.
    expect(await locks.getLock('scoped').tryLock()).toBe(false);
    await outside.unlock();
  });

  it('run over an array of names takes all of them as one multi-lock', async () => {
    const held = await locks.run(['multi-b', 'multi-a'], async ({ name }) => {
      expect(name).toEqual(['multi-a', 'multi-b']);
      return Promise.all([locks.getLock('multi-a').isHeldByCurrentOwner(), locks.getLock('multi-b').isHeldByCurrentOwner()]);
    });
    expect(held).toEqual([true, true]);
    expect(await locks.getLock('multi-a').isLocked()).toBe(false);
    expect(await locks.getLock('multi-b').isLocked()).toBe(false);
  });

  it('rejects an empty lock name and bad times before touching Redis', async () => {
    expect(() => locks.getLock('')).toThrow(/non-empty string/);
    await expect(locks.run('', async () => 1)).rejects.toThrow(/non-empty string/);
    await expect(locks.getLock('times').tryLock({ waitTime: -1 })).rejects.toThrow(/waitTime/);
    await expect(locks.getLock('times').lock({ leaseTime: 0 })).rejects.toThrow(/leaseTime/);
  });
});
