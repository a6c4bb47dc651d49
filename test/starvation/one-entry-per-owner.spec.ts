import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockService, ReadWriteLockService, type Lock } from '../../lib';
import { createLockApp, waitersQueued } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * One owner stands in a lock's line once, and an acquisition that gets the lock leaves no entry of
 * its caller behind (docs/hand-off-protocol.md). Before: two concurrent acquisitions on one lock
 * object each joined the line; once the first got in the second re-entered, and its entry stayed
 * (a ghost): the owner's last release handed the free lock to it, and everyone else waited out a
 * whole grant lease (5 s by default) while `tryLock()` said "busy".
 */
type Kind = 'reentrant' | 'fair' | 'write' | 'read';
const KINDS: Kind[] = ['reentrant', 'fair', 'write', 'read'];

const lockOf = (kind: Kind, moduleRef: TestingModule, name: string): Lock => {
  if (kind === 'fair') return moduleRef.get(FairLockService).getLock(name);
  if (kind === 'reentrant') return moduleRef.get(LockService).getLock(name);
  const rw = moduleRef.get(ReadWriteLockService).getReadWriteLock(name);
  return kind === 'read' ? rw.readLock() : rw.writeLock();
};
/** What excludes `kind` while it waits: a writer (a read waits for a write too). */
const blockerOf = (kind: Kind, moduleRef: TestingModule, name: string): Lock =>
  kind === 'read' || kind === 'write' ? moduleRef.get(ReadWriteLockService).getReadWriteLock(name).writeLock() : lockOf(kind, moduleRef, name);
const lineKeyOf = (kind: Kind, name: string): string => (kind === 'read' || kind === 'write' ? `lock:rw:{${name}}:line` : `lock:{${name}}:line`);

describe('One entry per owner in a line, none left behind', () => {
  let redis: TestRedis;
  let raw: Redis;
  let apps: TestingModule[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
  });
  afterEach(async () => {
    for (const app of apps) await app.close();
    apps = [];
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it.each(KINDS)('%s: two acquisitions on one lock object take one place in line and leave none behind', async (kind) => {
    const options = { redis: redis.url, fairLockWaiterTimeout: 5_000 };
    const appA = await createLockApp(options);
    const appB = await createLockApp(options);
    apps = [appA, appB];
    const name = `twice-${kind}`;
    const blocker = blockerOf(kind, appB, name);
    expect(await blocker.tryLock({ waitTime: 0 })).toBe(true);

    const lock = lockOf(kind, appA, name);
    const first = lock.tryLock({ waitTime: 10_000 });
    const second = lock.tryLock({ waitTime: 10_000 });
    await waitersQueued(appA, 2);
    const line = await raw.lrange(lineKeyOf(kind, name), 0, -1);
    expect(line).toHaveLength(1);

    await blocker.unlock();
    expect(await Promise.all([first, second])).toEqual([true, true]);
    expect(await lock.getHoldCount()).toBe(2);
    // Nothing of the caller is left in line (the line is gone: nobody else waits).
    expect(await raw.exists(lineKeyOf(kind, name))).toBe(0);

    await lock.unlock();
    await lock.unlock();
    // The free lock is free for anyone at once, not handed to a ghost entry for a grant lease.
    const other = lockOf(kind, appB, name);
    expect(await other.tryLock({ waitTime: 0 })).toBe(true);
    await other.unlock();
  }, 30_000);
});
