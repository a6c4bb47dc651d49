import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockService, ReadWriteLockService, SemaphoreService } from '../lib';
import { LockEngine } from '../lib/engine/lock-engine';
import { createLockApp } from './support/lock-app';
import { startRedis, type TestRedis } from './support/redis-server';

/**
 * A rolling upgrade from the layout before names were escaped (README "Upgrading: lock names with
 * braces"): for a name without `{` or `}` both versions use the same keys, so they keep excluding
 * each other while mixed; a name with braces has new keys, so an old and a new instance do not
 * exclude each other on it until every instance runs the new version.
 */

/** The key the previous version made for a lock name (lib/redis/lock-keys.ts before the escaping). */
function previousLayoutSegment(name: string): string {
  const open = name.indexOf('{');
  const close = open === -1 ? -1 : name.indexOf('}', open + 1);
  if (close > open + 1) return name;
  return name.startsWith('}') ? `{~${name}}` : `{${name}}`;
}

/** What an instance of the previous version leaves in Redis while it holds `lockKey` (a reentrant or fair hold). */
async function holdAsPreviousVersion(raw: Redis, lockKey: string, ownerId = 'previous-version:1'): Promise<void> {
  await raw.hset(lockKey, ownerId, 1, 'fence', '1');
  await raw.pexpire(lockKey, 30_000);
}

describe('rolling upgrade from the previous key layout', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url });
  });
  afterAll(async () => {
    raw?.disconnect();
    await app?.close();
    await redis?.stop();
  });

  it.each(['order:7', '100%', 'ünïcödé:x', 'a:b::c'])('a name without braces (%j) keeps its keys: the versions exclude each other', async (name) => {
    const keys = app.get(LockEngine).keys;
    expect(keys.lock(name)).toBe(`lock:${previousLayoutSegment(name)}`);
    expect(keys.readWrite(name)).toBe(`lock:rw:${previousLayoutSegment(name)}`);
    expect(keys.semaphore(name)).toBe(`lock:sem:${previousLayoutSegment(name)}`);

    // The previous version holds it: the new one waits.
    const oldKey = `lock:${previousLayoutSegment(name)}`;
    await holdAsPreviousVersion(raw, oldKey);
    expect(await app.get(LockService).getLock(name).tryLock({ waitTime: 0 })).toBe(false);
    expect(await app.get(FairLockService).getLock(name).tryLock({ waitTime: 0 })).toBe(false);

    // The previous version releases as it always did (delete, publish on the lock's channel): a
    // waiter of the new version is woken at once, well before its wait ends.
    const waiter = app.get(LockService).getLock(name);
    const acquired = waiter.tryLock({ waitTime: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const releasedAt = Date.now();
    await raw.del(oldKey);
    await raw.publish(`${oldKey}:channel`, 'one');
    expect(await acquired).toBe(true);
    expect(Date.now() - releasedAt).toBeLessThan(5_000);

    // The new version holds it: the previous one finds the very key it would take.
    expect(await raw.hexists(oldKey, (waiter as unknown as { ownerId: string }).ownerId)).toBe(1);
    await waiter.unlock();
  });

  it('a read-write lock and a semaphore on a name without braces live where the previous version kept them', async () => {
    const name = 'stock:9';
    const write = app.get(ReadWriteLockService).getReadWriteLock(name).writeLock();
    await write.lock();
    expect(await raw.hget(`lock:rw:${previousLayoutSegment(name)}`, 'mode')).toBe('write');
    await write.unlock();
    const permit = await app.get(SemaphoreService).getSemaphore(name, { permits: 2 }).acquire();
    expect(await raw.hget(`lock:sem:${previousLayoutSegment(name)}`, 'permits')).toBe('2');
    await permit.release();
  });

  it.each(['{tenant}:7', '}abc', 'x{}'])(
    'a name with braces (%j) has new keys: a holder of the previous version does not exclude the new one (documented)',
    async (name) => {
      const oldKey = `lock:${previousLayoutSegment(name)}`;
      expect(app.get(LockEngine).keys.lock(name)).not.toBe(oldKey);
      await holdAsPreviousVersion(raw, oldKey);
      const lock = app.get(LockService).getLock(name);
      expect(await lock.tryLock({ waitTime: 0 })).toBe(true);
      await lock.unlock();
      await raw.del(oldKey);
    },
  );
});
