import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockUpgradeError, ReadWriteLockService } from '../../lib';
import { RedissonNames } from '../../lib/layouts/redisson-names';
import { createLockApp, deferred, sleep, waitUntil } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * `ReadWriteLockService` in layout 'redisson' on a real Redis: Redisson's RReadWriteLock layout
 * (hash `N` with `mode`, readers `owner`, the writer `owner:write`, timeout keys per read hold),
 * between two module instances that behave as two processes.
 */
const WATCHDOG_MS = 1_500;

describe('ReadWriteLockService in layout redisson', () => {
  let redis: TestRedis;
  let raw: Redis;
  let apps: TestingModule[];
  let one: ReadWriteLockService;
  let two: ReadWriteLockService;
  let n = 0;
  const fresh = (what: string): string => `rw-${what}-${++n}`;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    apps = await Promise.all([1, 2].map(() => createLockApp({ redis: redis.url, layout: 'redisson', watchdogTimeout: WATCHDOG_MS })));
    [one, two] = apps.map((app) => app.get(ReadWriteLockService));
  });
  afterAll(async () => {
    await Promise.all(apps?.map((app) => app.close()) ?? []);
    await redis?.stop();
  });

  const readers = async (name: string): Promise<string[]> =>
    Object.keys(await raw.hgetall(name)).filter((field) => field !== 'mode' && !field.endsWith(':write'));

  it('readers of two modules hold together, each with its field and timeout key; a writer is refused meanwhile', async () => {
    const name = fresh('readers');
    const release = deferred();
    const inside = [deferred(), deferred()];
    const runs = [one, two].map((service, i) =>
      service.runRead(name, async () => {
        inside[i].resolve();
        await release.promise;
      }),
    );
    await Promise.all(inside.map((d) => d.promise));
    expect(await raw.hget(name, 'mode')).toBe('read');
    const owners = await readers(name);
    expect(owners).toHaveLength(2);
    for (const owner of owners) expect(await raw.get(`${RedissonNames.readTimeoutPrefix(name, owner)}:1`)).toBe('1');
    expect(await one.getReadWriteLock(name).writeLock().tryLock()).toBe(false);
    expect(await two.getReadWriteLock(name).writeLock().tryLock()).toBe(false);
    release.resolve();
    await Promise.all(runs);
    await waitUntil(async () => (await raw.exists(name)) === 0);
  });

  it('a writer of either module excludes every other holder: no update of a read-modify-write counter is lost', async () => {
    const name = fresh('counter');
    const counter = `${name}:value`;
    const rounds = 6;
    const workers = [one, one, two, two].map(async (service) => {
      for (let i = 0; i < rounds; i++) {
        await service.runWrite(
          name,
          async () => {
            const value = Number((await raw.get(counter)) ?? 0);
            await sleep(2);
            await raw.set(counter, String(value + 1));
          },
          { waitTime: 20_000 },
        );
      }
    });
    // Readers come and go meanwhile: they must never see a write half done, nor let one in.
    const reads = [one, two].map(async (service) => {
      for (let i = 0; i < rounds; i++) {
        await service.runRead(name, async () => {
          const before = await raw.get(counter);
          await sleep(3);
          expect(await raw.get(counter)).toBe(before);
        }, { waitTime: 20_000 });
      }
    });
    await Promise.all([...workers, ...reads]);
    expect(await raw.get(counter)).toBe(String(4 * rounds));
  });

  it('write re-entry counts on the writer field; the last release deletes the hash', async () => {
    const name = fresh('reentry');
    const lock = one.getReadWriteLock(name).writeLock();
    await lock.lock();
    await lock.lock();
    const [field] = Object.keys(await raw.hgetall(name)).filter((f) => f.endsWith(':write'));
    expect(await raw.hgetall(name)).toEqual({ mode: 'write', [field]: '2' });
    expect(await lock.getHoldCount()).toBe(2);
    expect(await two.getReadWriteLock(name).readLock().tryLock()).toBe(false);
    await lock.unlock();
    expect(await raw.hget(name, field)).toBe('1');
    await lock.unlock();
    expect(await raw.exists(name)).toBe(0);
  });

  it('a read inside the write, then the write released: a downgrade; other readers get in, writers do not', async () => {
    const name = fresh('downgrade');
    const rw = one.getReadWriteLock(name);
    await rw.writeLock().lock();
    await rw.readLock().lock();
    await rw.writeLock().unlock();
    const owners = await readers(name);
    expect(owners).toHaveLength(1);
    expect(await raw.hgetall(name)).toEqual({ mode: 'read', [owners[0]]: '1' });
    expect(await two.getReadWriteLock(name).writeLock().tryLock()).toBe(false);
    const other = two.getReadWriteLock(name).readLock();
    expect(await other.tryLock()).toBe(true);
    await other.unlock();
    await rw.readLock().unlock();
    expect(await raw.exists(name)).toBe(0);

    // The same through run: runRead inside runWrite uses the writer's owner.
    const seen = await one.runWrite(name, () => one.runRead(name, async () => raw.hgetall(name)));
    const writer = Object.keys(seen).find((f) => f.endsWith(':write'))!;
    expect(seen).toEqual({ mode: 'write', [writer]: '1', [writer.slice(0, -':write'.length)]: '1' });
  });

  it('an upgrade is refused with LockUpgradeError, at once, and writes nothing', async () => {
    const name = fresh('upgrade');
    await expect(one.runRead(name, () => one.runWrite(name, () => 'never'))).rejects.toBeInstanceOf(LockUpgradeError);
    const rw = two.getReadWriteLock(name);
    await rw.readLock().lock();
    await expect(rw.writeLock().tryLock({ waitTime: 5_000 })).rejects.toBeInstanceOf(LockUpgradeError);
    expect(Object.keys(await raw.hgetall(name)).some((f) => f.endsWith(':write'))).toBe(false);
    await rw.readLock().unlock();
    expect(await raw.exists(name)).toBe(0);
  });

  it('a plain lock of the same name makes a read wait (Redisson would grant beside it)', async () => {
    const name = fresh('kind');
    await raw.hset(name, 'some-java-client:1', '1');
    await raw.pexpire(name, 10_000);
    expect(await one.getReadWriteLock(name).readLock().tryLock({ waitTime: 200 })).toBe(false);
    expect(await raw.hgetall(name)).toEqual({ 'some-java-client:1': '1' });
    await raw.del(name);
  });

  it("a reader is renewed past the lease (its timeout keys too), and another reader's Java-style unlock leaves it held", async () => {
    const name = fresh('renewed');
    const release = deferred();
    const inside = deferred<AbortSignal>();
    const run = one.runRead(name, async ({ signal }) => {
      inside.resolve(signal);
      await release.promise;
    });
    const signal = await inside.promise;
    const [owner] = await readers(name);
    const timeoutKey = `${RedissonNames.readTimeoutPrefix(name, owner)}:1`;
    // Another reader (another module: the same scripts Java's reader runs) comes and leaves.
    const other = two.getReadWriteLock(name).readLock();
    await other.lock({ leaseTime: 60_000 });
    const started = Date.now();
    while (Date.now() - started < 3 * WATCHDOG_MS) {
      const [hashTtl, keyTtl] = await Promise.all([raw.pttl(name), raw.pttl(timeoutKey)]);
      expect(keyTtl).toBeGreaterThan(0);
      expect(keyTtl).toBeLessThanOrEqual(WATCHDOG_MS);
      expect(hashTtl).toBeGreaterThan(0);
      await sleep(100);
    }
    await other.unlock();
    expect(await raw.hgetall(name)).toEqual({ mode: 'read', [owner]: '1' });
    const ttl = await raw.pttl(name);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(WATCHDOG_MS); // the hash now lives as long as our key
    await sleep(WATCHDOG_MS); // past the TTL it had: renewed again
    expect(await raw.hget(name, owner)).toBe('1');
    expect(signal.aborted).toBe(false);
    release.resolve();
    await run;
    await waitUntil(async () => (await raw.exists(name)) === 0);
    expect(await raw.exists(timeoutKey)).toBe(0);
  });
});
