import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockNotHeldError, LockService, LockUpgradeError, ReadWriteLockService } from '../lib';
import { LuaScript } from '../lib/redis/lua-script';
import { completion, printed, spawnFixture } from './support/child-process';
import { createLockApp, deferred, releasesSettled, sleep, waitUntil } from './support/lock-app';
import { describeOnCluster, namesOnEveryMaster, startRedisCluster, TestRedisCluster } from './support/redis-cluster';
import { startRedis, TestRedis } from './support/redis-server';

const WATCHDOG_MS = 600;
/** Far above any hand-off: a waiter that gets in well before it was woken, not by the lease running out. */
const LONG_LEASE_MS = 10_000;

describe('read-write lock', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let other: TestingModule; // a second module instance: another process, as far as Redis can tell
  let seq = 0;
  const fresh = () => `rw-${++seq}`;
  const key = (name: string) => `lock:rw:{${name}}`;
  const rw = (module: TestingModule, name: string) => module.get(ReadWriteLockService).getReadWriteLock(name);
  /** Subscriber connections waiting on the lock's channel (one per module instance with waiters). */
  // Each waiting module listens on the lock's channel plus its client id.
  const waitingModules = async (name: string) => ((await raw.pubsub('CHANNELS', `${key(name)}:channel:*`)) as string[]).length;

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

  it('5 readers hold at once; a writer waits until the last one releases', async () => {
    const name = fresh();
    const readers = [app, other, app, other, app].map((m) => rw(m, name).readLock());
    for (const reader of readers) expect(await reader.tryLock({ leaseTime: LONG_LEASE_MS })).toBe(true);
    expect(await rw(app, name).readLock().isLocked()).toBe(true);
    expect(await rw(app, name).writeLock().isLocked()).toBe(false);
    for (const reader of readers) expect(await reader.getHoldCount()).toBe(1);

    const writer = rw(other, name).writeLock();
    let writerHolds = false;
    const acquired = writer.tryLock({ waitTime: 15_000 }).then((ok) => (writerHolds = ok));
    await waitUntil(async () => (await waitingModules(name)) === 1);
    for (const reader of readers.slice(0, 4)) {
      await reader.unlock();
      expect(writerHolds).toBe(false);
      expect(await raw.hget(key(name), 'mode')).toBe('read');
    }
    expect(await writer.tryLock()).toBe(false); // the last reader still holds
    const releasedAt = Date.now();
    await readers[4].unlock();
    expect(await acquired).toBe(true);
    expect(Date.now() - releasedAt).toBeLessThan(3_000); // woken, not the 10 s leases running out
    expect(await writer.isLocked()).toBe(true);
    expect(await rw(app, name).readLock().isLocked()).toBe(false);
    await writer.unlock();
    expect(await raw.exists(key(name), `${key(name)}:leases`)).toBe(0);
  });

  it('readers wait for a writer, and all get in together when it leaves', async () => {
    const name = fresh();
    const writer = rw(app, name).writeLock();
    await writer.lock({ leaseTime: LONG_LEASE_MS });
    const readers = [app, other, other].map((m) => rw(m, name).readLock());
    let inside = 0;
    const acquisitions = readers.map((reader) => reader.tryLock({ waitTime: 15_000 }).then((ok) => (inside++, ok)));
    await waitUntil(async () => (await waitingModules(name)) === 2);
    expect(inside).toBe(0);
    expect(await rw(other, name).readLock().tryLock()).toBe(false);
    const releasedAt = Date.now();
    await writer.unlock();
    expect(await Promise.all(acquisitions)).toEqual([true, true, true]);
    expect(Date.now() - releasedAt).toBeLessThan(3_000);
    expect(await rw(app, name).readLock().isLocked()).toBe(true);
    for (const reader of readers) await reader.unlock();
    expect(await raw.exists(key(name))).toBe(0);
  });

  it('a new reader queues behind a writer waiting in line, and each is handed the lock in turn', async () => {
    // Default watchdogTimeout (30 s): a waiter that only slept until the lock's TTL would not be in time.
    const patient = await createLockApp({ redis: redis.url });
    try {
      const name = fresh();
      const holder = rw(other, name).readLock();
      await holder.lock();
      const order: string[] = [];
      const writer = rw(patient, name).writeLock();
      const writerIn = writer.tryLock({ waitTime: 15_000 }).then((ok) => (order.push('writer'), ok));
      await waitUntil(async () => (await raw.llen(`${key(name)}:line`)) === 1);
      // The lock is held for reading, but a writer waits: a new reader does not pass it.
      const reader = rw(patient, name).readLock();
      const readerIn = reader.tryLock({ waitTime: 15_000 }).then((ok) => (order.push('reader'), ok));
      await waitUntil(async () => (await raw.llen(`${key(name)}:line`)) === 2);
      expect(order).toEqual([]);
      // inspect lists them in line order.
      const info = await app.get(ReadWriteLockService).inspect(name);
      expect(info.waiters?.map((waiter) => waiter.ownerId)).toEqual([writer, reader].map((view) => (view as unknown as { ownerId: string }).ownerId));
      // The holder re-enters as before: it holds already.
      expect(await holder.tryLock()).toBe(true);
      await holder.unlock();
      const started = Date.now();
      await holder.unlock();
      expect(await writerIn).toBe(true);
      expect(Date.now() - started).toBeLessThan(5_000); // handed over, not found at the TTL
      await writer.unlock();
      expect(await readerIn).toBe(true);
      expect(order).toEqual(['writer', 'reader']);
      await reader.unlock();
      expect(await raw.exists(key(name), `${key(name)}:line`)).toBe(0);
    } finally {
      await patient.close();
    }
  });

  it('the writer re-enters and may read too: after releasing write it still reads (downgrade)', async () => {
    const name = fresh();
    const lock = rw(app, name);
    const write = lock.writeLock();
    const read = lock.readLock();
    await write.lock();
    await write.lock();
    expect(await write.getHoldCount()).toBe(2);
    expect(await read.tryLock()).toBe(true);
    expect(await read.getHoldCount()).toBe(1);
    expect(await rw(other, name).readLock().tryLock()).toBe(false); // still write mode for everyone else

    const waitingReader = rw(other, name).readLock();
    const readerIn = waitingReader.tryLock({ waitTime: 15_000 });
    await waitUntil(async () => (await waitingModules(name)) === 1);
    await write.unlock();
    expect(await write.isLocked()).toBe(true);
    await write.unlock();
    // Downgraded: the owner still reads, and the waiting reader is let in.
    expect(await readerIn).toBe(true);
    expect(await write.isLocked()).toBe(false);
    expect(await read.isLocked()).toBe(true);
    expect(await read.isHeldByCurrentOwner()).toBe(true);
    expect(await write.isHeldByCurrentOwner()).toBe(false);
    expect(await rw(other, name).writeLock().tryLock()).toBe(false);
    await read.unlock();
    await waitingReader.unlock();
    expect(await raw.exists(key(name))).toBe(0);
  });

  it('a write request from an owner holding only the read lock is a LockUpgradeError at once', async () => {
    const name = fresh();
    const lock = rw(app, name);
    await lock.readLock().lock();
    const started = Date.now();
    await expect(lock.writeLock().tryLock({ waitTime: 15_000 })).rejects.toBeInstanceOf(LockUpgradeError);
    await expect(lock.writeLock().lock()).rejects.toBeInstanceOf(LockUpgradeError);
    expect(Date.now() - started).toBeLessThan(5_000); // refused, not waited for 15 s
    // Another owner's write request simply waits (the readers may leave).
    expect(await rw(other, name).writeLock().tryLock({ waitTime: 100 })).toBe(false);
    expect(await lock.readLock().isHeldByCurrentOwner()).toBe(true);
    await lock.readLock().unlock();
    expect(await lock.writeLock().tryLock()).toBe(true);
    await lock.writeLock().unlock();
  });

  it('runWrite then runRead downgrades; runRead then runWrite is a LockUpgradeError and never runs fn', async () => {
    const name = fresh();
    const locks = app.get(ReadWriteLockService);
    const counts = await locks.runWrite(name, () =>
      locks.runRead(name, async () => [
        await locks.getReadWriteLock(name).writeLock().getHoldCount(),
        await locks.getReadWriteLock(name).readLock().getHoldCount(),
      ]),
    );
    expect(counts).toEqual([1, 1]);
    await releasesSettled(app);
    expect(await raw.exists(key(name))).toBe(0);

    const fn = jest.fn(async () => 'wrote');
    await expect(locks.runRead(name, () => locks.runWrite(name, fn))).rejects.toBeInstanceOf(LockUpgradeError);
    expect(fn).not.toHaveBeenCalled();
    await releasesSettled(app);
    expect(await raw.exists(key(name))).toBe(0);
  });

  it('unlocking the read view while holding only the write lock rejects and the write hold stays renewed', async () => {
    const name = fresh();
    const lock = rw(app, name);
    await lock.writeLock().lock();
    await expect(lock.readLock().unlock()).rejects.toBeInstanceOf(LockNotHeldError);
    const until = Date.now() + WATCHDOG_MS * 4;
    while (Date.now() < until) {
      expect(await lock.writeLock().isHeldByCurrentOwner()).toBe(true);
      await sleep(WATCHDOG_MS / 4);
    }
    await lock.writeLock().unlock();
    expect(await raw.exists(key(name))).toBe(0);
  });

  it('the watchdog renews every reader hold well past watchdogTimeout', async () => {
    const name = fresh();
    const readers = [rw(app, name).readLock(), rw(other, name).readLock()];
    for (const reader of readers) await reader.lock();
    const until = Date.now() + WATCHDOG_MS * 4;
    while (Date.now() < until) {
      for (const reader of readers) expect(await reader.isHeldByCurrentOwner()).toBe(true);
      await sleep(WATCHDOG_MS / 4);
    }
    expect(await rw(app, name).writeLock().tryLock()).toBe(false);
    for (const reader of readers) await reader.unlock();
    expect(await raw.exists(key(name))).toBe(0);
  });

  it('a crashed reader hold expires on its own while the other readers keep theirs', async () => {
    const name = fresh();
    const child = spawnFixture('read-holder', [redis.url, name, String(WATCHDOG_MS)]);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await printed(child, 'held');
      const [crashedField] = (await raw.hkeys(key(name))).filter((field) => field.startsWith('read:'));
      const locks = app.get(ReadWriteLockService);
      const gate = deferred();
      const inside = deferred<{ signal: AbortSignal }>();
      const reading = locks.runRead(name, async ({ signal }) => {
        inside.resolve({ signal });
        await gate.promise;
        return locks.getReadWriteLock(name).readLock().getHoldCount();
      });
      const { signal } = await inside.promise;
      expect((await raw.hkeys(key(name))).filter((field) => field.startsWith('read:'))).toHaveLength(2);

      child.kill('SIGKILL');
      await exited;
      // The live reader's renewals clear the dead one once its lease (one watchdogTimeout) runs out.
      await waitUntil(async () => (await raw.hexists(key(name), crashedField)) === 0, 10_000);
      expect(signal.aborted).toBe(false);
      expect(await raw.hget(key(name), 'mode')).toBe('read');
      expect(await rw(other, name).writeLock().tryLock()).toBe(false); // the live reader still holds
      gate.resolve();
      expect(await reading).toBe(1);
      // `other` asks on a connection of its own (no order with this one's release): once it was answered.
      await releasesSettled(app);
      expect(await rw(other, name).writeLock().tryLock()).toBe(true);
      await rw(other, name).writeLock().forceUnlock();
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);

  it('the lock lives as long as its longest-lived reader', async () => {
    const name = fresh();
    const brief = rw(app, name).readLock();
    const long = rw(other, name).readLock();
    await brief.lock({ leaseTime: 300 });
    await long.lock({ leaseTime: 5_000 });
    expect(await brief.remainTimeToLive()).toBeGreaterThan(300);
    await waitUntil(async () => !(await brief.isHeldByCurrentOwner()), 5_000);
    expect(await long.isHeldByCurrentOwner()).toBe(true);
    expect(await long.isLocked()).toBe(true);
    expect(await rw(app, name).writeLock().tryLock()).toBe(false);
    await expect(brief.unlock()).rejects.toBeInstanceOf(LockNotHeldError);
    await long.unlock();
    expect(await raw.exists(key(name), `${key(name)}:leases`)).toBe(0);
  });

  it('forceUnlock of a view frees the lock only when it is held in that view\'s mode', async () => {
    const name = fresh();
    const readers = [rw(app, name).readLock(), rw(other, name).readLock()];
    for (const reader of readers) await reader.lock();
    const writer = rw(other, name).writeLock();
    const writerIn = writer.tryLock({ waitTime: 15_000 });
    await waitUntil(async () => (await waitingModules(name)) === 1);
    expect(await rw(app, name).writeLock().forceUnlock()).toBe(false);
    expect(await rw(app, name).readLock().forceUnlock()).toBe(true);
    expect(await writerIn).toBe(true);
    expect(await rw(app, name).readLock().forceUnlock()).toBe(false);
    expect(await rw(app, name).writeLock().forceUnlock()).toBe(true);
  });

  it('a read-write lock and the plain lock of the same name do not mix', async () => {
    const name = fresh();
    const plain = app.get(LockService).getLock(name);
    await plain.lock();
    const write = rw(other, name).writeLock();
    expect(await write.tryLock()).toBe(true);
    await write.unlock();
    await plain.unlock();
  });

  it('a resent acquire or release (same request id) does not change the outcome', async () => {
    const name = fresh();
    const keys = [key(name), `${key(name)}:leases`];
    const lineKeys = [`${key(name)}:line`, `${key(name)}:deadlines`, `${key(name)}:seen`, `${key(name)}:fence`];
    const readAcquire = LuaScript.named('rw-read-acquire');
    const readRelease = LuaScript.named('rw-read-release');
    const writeAcquire = LuaScript.named('rw-write-acquire');
    const readArgs = [10_000, 'owner-a', 'rq-1', '', 5_000, 'publish', 60_000];
    expect(await readAcquire.run(raw, [...keys, ...lineKeys], readArgs)).toBeNull();
    expect(await readAcquire.run(raw, [...keys, ...lineKeys], readArgs)).toBeNull();
    expect(await raw.hget(key(name), 'read:owner-a')).toBe('1');
    const release = (requestId: string) =>
      readRelease.run(raw, [...keys, `${key(name)}:channel`, `${key(name)}:rq:owner-a:${requestId}`, ...lineKeys], [
        'owner-a',
        10_000,
        'publish',
        'one',
        '',
        5_000,
        60_000,
      ]);
    expect(await release('rq-2')).toBe(1);
    expect(await release('rq-2')).toBe(1); // the first answer, not "not held"
    expect(await release('rq-3')).toBeNull();
    const writeKeys = [...keys, ...lineKeys];
    const writeArgs = [10_000, 'owner-b', 'rq-4', 60_000, '', 5_000, 'publish'];
    const [token] = (await writeAcquire.run(raw, writeKeys, writeArgs)) as [number];
    expect(token).toBeGreaterThan(0);
    expect(await writeAcquire.run(raw, writeKeys, writeArgs)).toEqual([token]);
    expect(await raw.hget(key(name), 'writes')).toBe('1');
  });

  it('the line in Redis: a release admits the head writer on a short lease, a leaver gives its grant back to the readers behind it, a dead waiter drops out', async () => {
    const name = fresh();
    const k = key(name);
    const keys = [k, `${k}:leases`, `${k}:line`, `${k}:deadlines`, `${k}:seen`, `${k}:fence`];
    const readAcquire = LuaScript.named('rw-read-acquire');
    const writeAcquire = LuaScript.named('rw-write-acquire');
    const readRelease = LuaScript.named('rw-read-release');
    const leave = LuaScript.named('rw-line-leave');
    const read = (owner: string, rq: string, entry: string, waiterTimeout = 5_000) =>
      readAcquire.run(raw, keys, [10_000, owner, rq, entry, waiterTimeout, 'publish', 60_000]);
    const write = (owner: string, rq: string, entry: string) => writeAcquire.run(raw, keys, [10_000, owner, rq, 60_000, entry, 1_000, 'publish']);
    const grants: string[] = [];
    const listener = redis.client();
    // Grants go to each waiter's process's channel (here the owner ids have no client part).
    await listener.psubscribe(`${k}:channel*`);
    listener.on('pmessage', (_pattern: string, _channel: string, message: string) => {
      if (message.startsWith('granted:')) grants.push(message);
    });
    try {
      expect(await read('r1', 'q1', 'r1 q1 10000 r')).toBeNull();
      // A writer waits; a new reader then queues behind it, and a dead one (never retries) too.
      expect(await write('w1', 'q2', 'w1 q2 10000 w')).toBeGreaterThan(0);
      expect(await read('r2', 'q3', 'r2 q3 10000 r')).toBeGreaterThan(0);
      expect(await read('r3', 'q4', 'r3 q4 10000 r')).toBeGreaterThan(0);
      expect(await raw.lrange(`${k}:line`, 0, -1)).toEqual(['w1 q2 10000 w', 'r2 q3 10000 r', 'r3 q4 10000 r']);
      // The reader holding re-enters (it holds already), whoever waits.
      expect(await read('r1', 'q5', '')).toBeNull();
      const release = (rq: string) =>
        readRelease.run(raw, [k, `${k}:leases`, `${k}:channel`, `${k}:rq:r1:${rq}`, ...keys.slice(2)], ['r1', 10_000, 'publish', 'one', '', 1_000, 60_000]);
      expect(await release('q6')).toBe(0);
      expect(await release('q7')).toBe(1);
      // Handed to the writer inside the release, on a lease of at most the waiter timeout (1 s).
      expect(await raw.hget(k, 'writer')).toBe('w1');
      expect(await raw.pttl(k)).toBeLessThanOrEqual(1_000);
      // Its attempt finds its grant: idempotent, and the full lease.
      const [token] = (await write('w1', 'q2', 'w1 q2 10000 w')) as [number];
      expect(await raw.hget(k, 'writes')).toBe('1');
      expect(await raw.pttl(k)).toBeGreaterThan(5_000);
      // r3 dies: its deadline passes (the dropping attempt sees it as past).
      await raw.zadd(`${k}:deadlines`, 1, 'r3 q4 10000 r');
      // The writer gives up after all (its grant message went unheard): its hold goes to the reader behind.
      expect(await leave.run(raw, keys.slice(0, 2).concat([`${k}:channel`], keys.slice(2)), ['w1 q2 10000 w', 'w1', 'q2', 'publish', 'all', 1_000, 60_000])).toBe(1);
      expect(await raw.hget(k, 'mode')).toBe('read');
      expect(await raw.hget(k, 'read:r2')).toBe('1');
      expect(await raw.hget(k, 'read:r3')).toBeNull();
      expect(await raw.exists(`${k}:line`, `${k}:deadlines`, `${k}:seen`)).toBe(0);
      await waitUntil(() => grants.length >= 2);
      expect(grants[0]).toMatch(new RegExp(`^granted:w1 q2 10000 w ${token} - \\d+ 1000$`));
      // A read's grant carries its episode (when the owner's reads began, server ms) where a write's carries its token.
      expect(grants[1]).toMatch(/^granted:r2 q3 10000 r \d{13} - \d+ 1000$/);
    } finally {
      listener.disconnect();
    }
  });

  it('3 processes x 20 non-atomic increments under runWrite lose no update', async () => {
    const name = fresh();
    const children = [1, 2, 3].map(() =>
      spawnFixture('counter-worker', [redis.url, 'write', name, '20']),
    );
    await Promise.all(children.map(completion));
    expect(Number(await raw.get(`counter:write:${name}`))).toBe(60);
  }, 90_000);
});

describeOnCluster('read-write lock on a 3-master cluster', () => {
  let cluster: TestRedisCluster;
  let app: TestingModule;
  let other: TestingModule;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    app = await createLockApp({ redis: cluster.cluster(), watchdogTimeout: WATCHDOG_MS });
    other = await createLockApp({ redis: cluster.cluster(), watchdogTimeout: WATCHDOG_MS });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await cluster?.stop();
  });

  it('readers and writers hand off by sharded pub/sub on every master, renewed by the watchdog', async () => {
    const groups = await namesOnEveryMaster(cluster, 'rw-cluster', 1, (name) => `lock:rw:{${name}}`);
    for (const name of groups.flat()) {
      const locks = (m: TestingModule) => m.get(ReadWriteLockService).getReadWriteLock(name);
      const readers = [locks(app).readLock(), locks(other).readLock()];
      for (const reader of readers) await reader.lock(); // watchdog-kept
      const writer = locks(other).writeLock();
      const writerIn = writer.tryLock({ waitTime: 8_000 });
      await sleep(WATCHDOG_MS * 2); // several renewal rounds while the writer waits
      for (const reader of readers) expect(await reader.isHeldByCurrentOwner()).toBe(true);
      await readers[0].unlock();
      const releasedAt = Date.now();
      await readers[1].unlock();
      expect(await writerIn).toBe(true);
      expect(Date.now() - releasedAt).toBeLessThan(3_000);
      const nextReader = locks(app).readLock();
      const readerIn = nextReader.tryLock({ waitTime: 8_000 });
      await writer.unlock();
      expect(await readerIn).toBe(true);
      await nextReader.unlock();
    }
  }, 60_000);
});
