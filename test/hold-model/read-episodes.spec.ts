import type { TestingModule } from '@nestjs/testing';
import { LockNotHeldError, ReadWriteLockService } from '../../lib';
import type { OwnedLock } from '../../lib/locks/owned-lock';
import { createLockApp, releasesSettled, waitUntil } from '../support/lock-app';
import { startRedis, TestRedis } from '../support/redis-server';

/**
 * Read holds have episodes of their own (when the owner's reads began in Redis): a read grant of a
 * later episode tells the bodies counting on the ended one, and a release names its episode, so an
 * owed unlock of an ended read never releases a later read of the same owner
 * (docs/owners-and-reentry.md#the-owner-model).
 */
describe('read episodes', () => {
  let redis: TestRedis;
  let app: TestingModule;
  let other: TestingModule;
  beforeAll(async () => {
    redis = await startRedis();
    app = await createLockApp({ redis: redis.url, watchdogTimeout: 60_000 });
    other = await createLockApp({ redis: redis.url });
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await redis?.stop();
  });
  it('two flows on one read view: a lost read then a new read; A told, A unlock refused, B unlock frees', async () => {
    const name = 'rwf';
    const rw = app.get(ReadWriteLockService).getReadWriteLock(name);
    await rw.readLock().lock(); // A
    const aSignal = (rw.readLock() as unknown as OwnedLock).runContext().signal;
    await redis.client().del(`lock:rw:{${name}}`, `lock:rw:{${name}}:leases`);
    // The new read must begin in a later millisecond than the lost one (its episode is its start).
    const lostAt = Date.now();
    await waitUntil(() => Date.now() > lostAt, 1_000);
    const w = other.get(ReadWriteLockService).getReadWriteLock(name).writeLock();
    expect(await w.tryLock()).toBe(true);
    await w.unlock();
    await rw.readLock().lock(); // B
    expect(aSignal.aborted).toBe(true);
    await expect(rw.readLock().unlock()).rejects.toBeInstanceOf(LockNotHeldError); // A owed
    expect(await other.get(ReadWriteLockService).getReadWriteLock(name).writeLock().tryLock()).toBe(false);
    await rw.readLock().unlock(); // B
    await releasesSettled(app);
    const w2 = other.get(ReadWriteLockService).getReadWriteLock(name).writeLock();
    expect(await w2.tryLock()).toBe(true);
    await w2.unlock();
  });
  it('a real downgrade and re-read keep the episode', async () => {
    const name = 'rwd';
    const rw = app.get(ReadWriteLockService).getReadWriteLock(name);
    await rw.writeLock().lock();
    await rw.readLock().lock();
    await rw.readLock().unlock();
    await rw.readLock().lock();
    const s = (rw.readLock() as unknown as OwnedLock).runContext().signal;
    await rw.readLock().lock();
    expect(s.aborted).toBe(false);
    await rw.readLock().unlock();
    await rw.readLock().unlock();
    await rw.writeLock().unlock();
    await releasesSettled(app);
    expect(await redis.client().exists(`lock:rw:{${name}}`)).toBe(0);
  });
});
