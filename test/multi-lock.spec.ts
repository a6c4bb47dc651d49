import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockLostError, LockService, LockTimeoutError, LockUpgradeError, ReadWriteLockService } from '../lib';
import { createLockApp, deferred, releasesSettled, sleep, waitUntil } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';

describe('MultiLock', () => {
  const WATCHDOG_MS = 600;
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let other: TestingModule;
  let seq = 0;
  const fresh = (label: string) => `multi-${label}-${++seq}`;
  const key = (name: string) => `lock:{${name}}`;
  const locks = (m: TestingModule) => m.get(LockService);
  const exists = async (...names: string[]) => Promise.all(names.map(async (n) => (await raw.exists(key(n))) === 1));

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, watchdogTimeout: WATCHDOG_MS });
    other = await createLockApp({ redis: redis.url, watchdogTimeout: WATCHDOG_MS });
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await redis?.stop();
  });

  it('takes every member, and unlock releases every member', async () => {
    const [a, b, c] = [fresh('a'), fresh('b'), fresh('c')];
    const multi = locks(app).getMultiLock(locks(app).getLock(a), locks(app).getLock(b), locks(app).getLock(c));
    await multi.lock();
    expect(await exists(a, b, c)).toEqual([true, true, true]);
    expect(await multi.isLocked()).toBe(true);
    expect(await multi.isHeldByCurrentOwner()).toBe(true);
    expect(await locks(other).getLock(b).tryLock()).toBe(false);
    await multi.unlock();
    await releasesSettled(app);
    expect(await exists(a, b, c)).toEqual([false, false, false]);
    expect(await multi.remainTimeToLive()).toBe(-2);
  });

  it('is all-or-nothing: one busy member means none is held, after a wait or at once', async () => {
    const [a, b, c] = [fresh('a'), fresh('b'), fresh('c')];
    const blocker = locks(other).getLock(b);
    await blocker.lock();
    const multi = locks(app).getMultiLock(locks(app).getLock(a), locks(app).getLock(b), locks(app).getLock(c));
    expect(await multi.tryLock()).toBe(false);
    await releasesSettled(app);
    expect(await exists(a, c)).toEqual([false, false]);
    expect(await multi.tryLock({ waitTime: 150 })).toBe(false);
    await releasesSettled(app);
    expect(await exists(a, c)).toEqual([false, false]);
    await blocker.unlock();
    expect(await multi.tryLock()).toBe(true);
    await multi.unlock();
  });

  it('releases what it took when a later member fails with an error', async () => {
    // 'lock:rw:{multi-a-...}' sorts before 'lock:rw:{multi-rw-...}', so the first write is taken
    // first, then the second fails: its owner holds only its read lock.
    const first = app.get(ReadWriteLockService).getReadWriteLock(fresh('a'));
    const rwName = fresh('rw');
    const rw = app.get(ReadWriteLockService).getReadWriteLock(rwName);
    await rw.readLock().lock();
    const multi = locks(app).getMultiLock(first.writeLock(), rw.writeLock());
    await expect(multi.tryLock({ waitTime: 1_000 })).rejects.toBeInstanceOf(LockUpgradeError);
    expect(await first.writeLock().isLocked()).toBe(false);
    expect(await first.readLock().isLocked()).toBe(false);
    await rw.readLock().unlock();
  });

  it('takes members in a stable order: it never holds a later member while waiting for an earlier one', async () => {
    const [a, b] = [fresh('a'), fresh('b')]; // key(a) < key(b)
    const blocker = locks(other).getLock(a);
    await blocker.lock();
    // Given in the order {b, a}: it must wait for a first, holding nothing.
    const waiting = locks(app).getMultiLock(locks(app).getLock(b), locks(app).getLock(a)).tryLock({ waitTime: 5_000 });
    // Once it waits on a's channel, it is past its attempts on a: b must still be untouched.
    await waitUntil(async () => ((await raw.pubsub('CHANNELS', `${key(a)}:channel:*`)) as string[]).length === 1);
    await releasesSettled(app);
    expect(await exists(b)).toEqual([false]);
    expect(await locks(other).getLock(b).tryLock()).toBe(true); // b stays free for others meanwhile
    await locks(other).getLock(b).forceUnlock();
    await blocker.unlock();
    expect(await waiting).toBe(true);
  });

  it('two callers taking {a,b} and {b,a} concurrently never deadlock, and exclude each other', async () => {
    const [a, b] = [fresh('a'), fresh('b')];
    let inside = 0;
    let maxInside = 0;
    const caller = async (module: TestingModule, order: string[]) => {
      for (let i = 0; i < 15; i++) {
        const service = locks(module);
        const multi = service.getMultiLock(...order.map((n) => service.getLock(n)));
        await multi.lock();
        maxInside = Math.max(maxInside, ++inside);
        await sleep(1);
        inside--;
        await multi.unlock();
      }
    };
    await Promise.all([caller(app, [a, b]), caller(other, [b, a]), caller(app, [b, a]), caller(other, [a, b])]);
    expect(maxInside).toBe(1);
  });

  it('overlapping sets exclude on the shared member only', async () => {
    const [a, b, c] = [fresh('a'), fresh('b'), fresh('c')];
    const gate = deferred();
    let firstInside = false;
    const first = locks(app).run([a, b], async () => {
      firstInside = true;
      await gate.promise;
    });
    await waitUntil(() => firstInside);
    await expect(locks(other).run([b, c], async () => 'ran', { waitTime: 100 })).rejects.toBeInstanceOf(LockTimeoutError);
    await releasesSettled(app);
    expect(await exists(c)).toEqual([false]);
    expect(await locks(other).run([c], async () => 'disjoint', { waitTime: 100 })).toBe('disjoint');
    const second = locks(other).run([b, c], async () => 'after', { waitTime: 5_000 });
    gate.resolve();
    await first;
    expect(await second).toBe('after');
  });

  it('run([...names]) holds every name during fn and releases them after, whatever fn did', async () => {
    const names = [fresh('x'), fresh('y'), fresh('z')];
    const seen = await locks(app).run(names, async ({ name }) => {
      expect(await exists(...names)).toEqual([true, true, true]);
      return name;
    });
    expect(seen).toEqual([...names].sort((p, q) => key(p).localeCompare(key(q))));
    await releasesSettled(app);
    expect(await exists(...names)).toEqual([false, false, false]);
    const thrown = new Error('boom');
    await expect(locks(app).run(names, async () => Promise.reject(thrown))).rejects.toBe(thrown);
    await releasesSettled(app);
    expect(await exists(...names)).toEqual([false, false, false]);
  });

  it('run([...names]) throws LockTimeoutError naming the names, never calling fn, when one is busy', async () => {
    const names = [fresh('x'), fresh('y')];
    const blocker = locks(other).getLock(names[1]);
    await blocker.lock();
    const fn = jest.fn(async () => 'ran');
    const error = await locks(app).run(names, fn, { waitTime: 100 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as LockTimeoutError).lockName).toEqual(expect.arrayContaining(names));
    expect(fn).not.toHaveBeenCalled();
    await releasesSettled(app);
    expect(await exists(names[0])).toEqual([false]);
    await blocker.unlock();
  });

  it('re-enters: nested run over the same names, and a member asked alone inside, reuse the owner', async () => {
    const names = [fresh('x'), fresh('y')];
    const counts = await locks(app).run(names, () =>
      locks(app).run(names, async () => Promise.all([locks(app).getLock(names[0]).getHoldCount(), locks(app).getLock(names[1]).getHoldCount()]), {
        waitTime: 100,
      }),
    );
    expect(counts).toEqual([2, 2]);
    await releasesSettled(app);
    expect(await exists(...names)).toEqual([false, false]);
  });

  it('aborts the signal when any member is lost', async () => {
    const names = [fresh('x'), fresh('y')];
    const gate = deferred();
    let seen: AbortSignal | undefined;
    const running = locks(app).run(names, async ({ signal }) => {
      seen = signal;
      await gate.promise;
      return 'done';
    });
    await waitUntil(() => seen !== undefined);
    await raw.del(key(names[1]));
    await waitUntil(() => seen!.aborted, WATCHDOG_MS * 5);
    expect(seen!.reason).toBeInstanceOf(LockLostError);
    gate.resolve();
    await expect(running).resolves.toBe('done');
    await releasesSettled(app);
    expect(await exists(...names)).toEqual([false, false]);
  });

  it('mixes kinds: reentrant, fair and write members in one multi-lock', async () => {
    const [plain, fair, rw] = [fresh('plain'), fresh('fair'), fresh('rw')];
    const multi = locks(app).getMultiLock(
      locks(app).getLock(plain),
      app.get(FairLockService).getLock(fair),
      app.get(ReadWriteLockService).getReadWriteLock(rw).writeLock(),
    );
    expect(await multi.tryLock()).toBe(true);
    expect(await locks(other).getLock(plain).tryLock()).toBe(false);
    expect(await other.get(FairLockService).getLock(fair).tryLock()).toBe(false);
    expect(await other.get(ReadWriteLockService).getReadWriteLock(rw).readLock().tryLock()).toBe(false);
    await multi.unlock();
    expect(await other.get(ReadWriteLockService).getReadWriteLock(rw).readLock().tryLock()).toBe(true);
    await releasesSettled(app);
    expect(await exists(plain, fair)).toEqual([false, false]);
  });

  it('rejects an empty set and objects that are not this library\'s locks', async () => {
    await expect(locks(app).run([], async () => 'ran')).rejects.toThrow('A multi-lock needs at least one lock (got none)');
    expect(() => locks(app).getMultiLock()).toThrow(TypeError);
    expect(() => locks(app).getMultiLock(locks(app).getLock('x'), {} as never)).toThrow(/argument 1 is \{\}/);
  });
});
