import { ChildProcess } from 'node:child_process';
import { hostname } from 'node:os';
import Redis from 'ioredis';
import { TestingModule } from '@nestjs/testing';
import { FairLockService, LockInfo, LockService, ReadWriteLockService, SemaphoreService } from '../lib';
import { LockInspector } from '../lib/introspection/lock-inspector';
import { LockKeys } from '../lib/redis/lock-keys';
import { LUA_SOURCES } from '../lib/redis/lua-sources.generated';
import { LockEngine } from '../lib/engine/lock-engine';
import { SemaphoreKeys } from '../lib/semaphores/semaphore-keys';
import { spawnFixture } from './support/child-process';
import { createLockApp, waitUntil } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';

/** Resolves with the first stdout line of the child, parsed as JSON. */
function firstJsonLine<T>(child: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr?.on('data', (d) => (err += d));
    child.stdout?.on('data', (d) => {
      out += d;
      const newline = out.indexOf('\n');
      if (newline !== -1) resolve(JSON.parse(out.slice(0, newline)) as T);
    });
    child.once('exit', (code) => reject(new Error(`child exited ${code}: ${err || out}`)));
  });
}

interface HolderLine {
  clientId: string;
  pid: number;
  fencingToken?: number;
}

describe('inspect and list', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  const children: ChildProcess[] = [];

  const spawnHolder = (name: string, clientName: string, kind: string, holds: number, watchdogTimeout = 1_000) => {
    const child = spawnFixture('inspect-holder', [redis.url, name, String(watchdogTimeout), clientName, kind, String(holds)]);
    children.push(child);
    return child;
  };

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, clientName: 'inspector', fairLockWaiterTimeout: 2_000 });
  });

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await app?.close();
    await redis?.stop();
  });

  it('reports the holder in another process: instance identity, hold count, token and TTL; its identity goes with its lease once killed', async () => {
    const child = spawnHolder('inspect:order:1', 'billing-worker', 'reentrant', 2);
    const holder = await firstJsonLine<HolderLine>(child);
    const info = await app.get(LockService).inspect('inspect:order:1');
    expect(info).toMatchObject({ name: 'inspect:order:1', kind: 'reentrant', locked: true, fencingToken: holder.fencingToken });
    expect(info.ttl).toBeGreaterThan(0);
    expect(info.ttl).toBeLessThanOrEqual(1_000);
    expect(info.holders).toHaveLength(1);
    const [entry] = info.holders;
    expect(entry.ownerId.startsWith(`${holder.clientId}:`)).toBe(true);
    expect(entry.holdCount).toBe(2);
    expect(entry.instance).toMatchObject({ clientId: holder.clientId, clientName: 'billing-worker', host: hostname(), pid: holder.pid });
    expect(Date.parse(entry.instance!.startedAt)).toBeLessThanOrEqual(Date.now());
    expect(info.waiters).toBeUndefined();

    const instanceKey = `lock.instance:{${holder.clientId}}`;
    expect(await raw.exists(instanceKey)).toBe(1);
    child.kill('SIGKILL');
    // Nothing renews the lease nor the identity any more: both end with the lease (1 s).
    await waitUntil(async () => (await raw.exists(instanceKey)) === 0, 10_000);
    await waitUntil(async () => !(await app.get(LockService).inspect('inspect:order:1')).locked, 10_000);
    expect(await app.get(LockService).inspect('inspect:order:1')).toEqual({
      name: 'inspect:order:1',
      kind: 'reentrant',
      locked: false,
      ttl: -2,
      holders: [],
      serverTime: expect.any(Number),
    });
  });

  it('lists a fair lock\'s waiting line in order, each waiter with its instance', async () => {
    const name = 'inspect:fair';
    const locks = app.get(FairLockService);
    const lock = locks.getLock(name);
    await lock.lock();
    const first = spawnHolder(name, 'first-in-line', 'fair-wait', 1, 5_000);
    const firstLine = await firstJsonLine<HolderLine>(first);
    await waitUntil(async () => (await raw.llen(`lock:{${name}}:line`)) === 1);
    const second = spawnHolder(name, 'second-in-line', 'fair-wait', 1, 5_000);
    const secondLine = await firstJsonLine<HolderLine>(second);
    await waitUntil(async () => (await raw.llen(`lock:{${name}}:line`)) === 2);

    const info = await locks.inspect(name);
    expect(info.kind).toBe('fair');
    expect(info.holders).toHaveLength(1);
    expect(info.holders[0].instance).toMatchObject({ clientName: 'inspector', pid: process.pid });
    expect(info.waiters!.map((w) => w.instance?.clientName)).toEqual(['first-in-line', 'second-in-line']);
    expect(info.waiters![0].ownerId.startsWith(`${firstLine.clientId}:`)).toBe(true);
    expect(info.waiters![1].ownerId.startsWith(`${secondLine.clientId}:`)).toBe(true);
    first.kill('SIGKILL');
    second.kill('SIGKILL');
    await lock.unlock();
  });

  it('reports a read-write lock\'s readers and writer with their modes', async () => {
    const rw = app.get(ReadWriteLockService);
    const child = spawnHolder('inspect:rw', 'reader-process', 'read', 1, 5_000);
    const reader = await firstJsonLine<HolderLine>(child);
    const lock = rw.getReadWriteLock('inspect:rw').readLock();
    await lock.lock();
    const info = await rw.inspect('inspect:rw');
    expect(info).toMatchObject({ kind: 'read-write', locked: true, mode: 'read' });
    expect(info.fencingToken).toBeUndefined();
    expect(info.holders.map((h) => [h.mode, h.holdCount, h.instance?.clientName]).sort()).toEqual([
      ['read', 1, 'inspector'],
      ['read', 1, 'reader-process'],
    ]);
    expect(info.holders.some((h) => h.ownerId.startsWith(`${reader.clientId}:`))).toBe(true);
    child.kill('SIGKILL');
    await lock.unlock();

    const write = rw.getReadWriteLock('inspect:rw2').writeLock();
    await write.lock();
    const written = await rw.inspect('inspect:rw2');
    expect(written).toMatchObject({ mode: 'write', fencingToken: write.getFencingToken() });
    expect(written.holders).toEqual([expect.objectContaining({ mode: 'write', holdCount: 1 })]);
    await write.unlock();
  });

  it('list() walks the existing locks with SCAN, filtered by a name pattern', async () => {
    const locks = app.get(LockService);
    const held = ['list:a', 'list:b', 'list:{tagged}:c', 'other:x'].map((name) => locks.getLock(name));
    for (const lock of held) await lock.lock();
    const write = app.get(ReadWriteLockService).getReadWriteLock('list:rw').writeLock();
    await write.lock();

    const seen: LockInfo[] = [];
    for await (const info of locks.list({ match: 'list:*', count: 2 })) seen.push(info);
    expect(seen.map((info) => `${info.kind} ${info.name}`).sort()).toEqual([
      'read-write list:rw',
      'reentrant list:a',
      'reentrant list:b',
      'reentrant list:{tagged}:c',
    ]);
    expect(seen.every((info) => info.holders[0]?.instance?.clientName === 'inspector')).toBe(true);

    const all: string[] = [];
    for await (const info of locks.list()) all.push(info.name);
    expect(all).toEqual(expect.arrayContaining(['list:a', 'other:x', 'list:rw']));
    for (const lock of held) await lock.unlock();
    await write.unlock();
  });

  it('list() reports every kind as itself: a semaphore under its own name with its permits, names with braces as given', async () => {
    const permit = await app.get(SemaphoreService).getSemaphore('kinds:sem', { permits: 3 }).acquire({ take: 2 });
    const braced = app.get(LockService).getLock('kinds:{x}%7D}');
    await braced.lock();
    const rw = app.get(ReadWriteLockService).getReadWriteLock('kinds:{rw}').readLock();
    await rw.lock();
    try {
      const seen: LockInfo[] = [];
      for await (const info of app.get(LockService).list({ match: 'kinds:*' })) seen.push(info);
      expect(seen.map((info) => `${info.kind} ${info.name}`).sort()).toEqual(['read-write kinds:{rw}', 'reentrant kinds:{x}%7D}', 'semaphore kinds:sem']);
      const semaphore = seen.find((info) => info.kind === 'semaphore')!;
      expect(semaphore).toMatchObject({ name: 'kinds:sem', locked: true, permits: 3, available: 1, waiters: [] });
      expect(semaphore.holders).toEqual([
        expect.objectContaining({ ownerId: permit.ownerId, holdCount: 2, fencingToken: permit.fencingToken, instance: expect.objectContaining({ clientName: 'inspector' }) }),
      ]);
      expect(semaphore.ttl).toBeGreaterThan(0);
    } finally {
      await permit.release();
      await braced.unlock();
      await rw.unlock();
    }
  });

  it('list() refuses an invalid or too costly pattern with a TypeError before asking Redis', async () => {
    const locks = app.get(LockService);
    const first = (match: string) => locks.list({ match })[Symbol.asyncIterator]().next();
    await expect(first('[z-a]')).rejects.toThrow(new TypeError('list({ match: "[z-a]" }) is refused: the pattern is invalid: the range [z-a] is reversed (write [a-z])'));
    await expect(first('order:[abc')).rejects.toThrow(TypeError);
    await expect(first('*?*?*?*?*?*?*?!')).rejects.toThrow(/too costly to match: it has 14 wildcards/);
    // A huge COUNT would make one SCAN walk the whole keyspace while Redis serves nobody else.
    for (const count of [0, 1.5, 1e9]) {
      await expect(locks.list({ count })[Symbol.asyncIterator]().next()).rejects.toThrow(/count must be a whole number from 1 to 10000/);
    }
    // Redis is never given the pattern: a name pattern full of stars costs it nothing more than `lock:*`.
    const started = performance.now();
    for await (const info of locks.list({ match: '*?*?!' })) expect(info).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('registers the instance once, with the clientName option, and deletes it on shutdown', async () => {
    const other = await createLockApp({ redis: redis.url, clientName: 'short-lived', watchdogTimeout: 600 });
    const { clientId } = other.get(LockEngine).ids;
    const key = `lock.instance:{${clientId}}`;
    await waitUntil(async () => (await raw.hget(key, 'clientName')) === 'short-lived');
    expect(await raw.pttl(key)).toBeLessThanOrEqual(600);
    // Kept alive by the watchdog's rounds even with nothing held.
    const registeredAt = Date.now();
    await waitUntil(() => Date.now() - registeredAt > 1_500, 5_000, 50);
    expect(await raw.exists(key)).toBe(1);
    await other.close();
    expect(await raw.exists(key)).toBe(0);
  });
});

/**
 * What the lock board asks of a lock with a long line (docs/lock-board.md#cost): the first
 * `waiterLimit` waiters and how many wait in all, at a cost that does not grow with the line; and
 * only the identity fields of each waiter's instance hash, never its other (large) fields.
 * `inspect()` and `list()` are unchanged: every waiter, no `waiterCount`.
 */
describe('inspect with a waiter limit (the lock board lists the first 50 of a line)', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let inspector: LockInspector;
  let engine: LockEngine;
  const far = () => Date.now() + 3_600_000;
  const identity = (i: number) => ({ clientId: `c${i}`, clientName: `client ${i}`, host: 'host-a', pid: 1_000 + i, startedAt: '2024-01-01T00:00:00.000Z' });

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, clientName: 'inspector' });
    inspector = app.get(LockInspector);
    engine = app.get(LockEngine);
    // 50 waiting instances, each hash with a large field beside its identity (as contention counters can be).
    const pipeline = raw.pipeline();
    for (let i = 0; i < 50; i++) {
      const { clientId, clientName, host, pid, startedAt } = identity(i);
      pipeline.hset(`${engine.instances.keyPrefix}{${clientId}}`, 'clientId', clientId, 'clientName', clientName, 'host', host, 'pid', pid, 'startedAt', startedAt, 'contention', 'x'.repeat(20_000));
    }
    await pipeline.exec();
  });
  afterAll(async () => {
    await raw?.config('SET', 'slowlog-log-slower-than', '10000');
    await app?.close();
    await redis?.stop();
  });

  it('a lock with 20,000 waiters: the first 50 in line order with their instances, waiterCount 20,000, no Redis command over 10 ms', async () => {
    const lock = app.get(LockService).getLock('long-line');
    await lock.lock({ leaseTime: 60_000 });
    const lockKey = engine.keys.lock('long-line');
    const pipeline = raw.pipeline();
    // Tombstones (no deadline) at the head, then 20,000 live entries as reentrant-acquire.lua writes them, then a duplicate.
    for (let i = 0; i < 3; i++) pipeline.rpush(LockKeys.line(lockKey), `gone:${i} r 30000 p`);
    for (let i = 0; i < 20_000; i++) {
      const entry = `c${i % 50}:${i} r${i} 30000 p`;
      pipeline.rpush(LockKeys.line(lockKey), entry);
      pipeline.zadd(LockKeys.lineDeadlines(lockKey), far(), entry);
    }
    pipeline.rpush(LockKeys.line(lockKey), 'c0:0 r0 30000 p');
    await pipeline.exec();
    await raw.config('SET', 'slowlog-log-slower-than', '10000');
    await raw.slowlog('RESET');
    const info = await inspector.inspectLock('long-line', 'reentrant', { waiterLimit: 50 });
    const slow = ((await raw.slowlog('GET', 10)) as Array<[number, number, number, string[]]>).map(([, , micros, args]) => `${args[0]} ${micros} us`);
    expect(slow).toEqual([]);
    expect(info.waiterCount).toBe(20_000);
    expect(info.waiters!.map((waiter) => waiter.ownerId)).toEqual(Array.from({ length: 50 }, (_, i) => `c${i}:${i}`));
    expect(info.waiters![7].instance).toEqual(identity(7));
    expect(info.holders).toHaveLength(1);
    // inspect() as before: every waiter, no waiterCount.
    const all = await app.get(LockService).inspect('long-line');
    expect(all.waiters).toHaveLength(20_000);
    expect(all).not.toHaveProperty('waiterCount');
    await lock.forceUnlock();
    await raw.del(LockKeys.line(lockKey), LockKeys.lineDeadlines(lockKey));
  }, 30_000);

  it('a read-write lock and a semaphore: the first waiters with waiterCount; behind more tombstones than the bound, none listed but all counted', async () => {
    const rw = app.get(ReadWriteLockService).getReadWriteLock('rw-line');
    await rw.writeLock().lock({ leaseTime: 60_000 });
    const rwKey = engine.keys.readWrite('rw-line');
    const semaphore = await app.get(SemaphoreService).getSemaphore('sem-line', { permits: 1 }).acquire({ leaseTime: 60_000 });
    const sem = new SemaphoreKeys(engine.keys, 'sem-line');
    const pipeline = raw.pipeline();
    for (let i = 0; i < 120; i++) {
      pipeline.rpush(LockKeys.line(rwKey), `c${i % 50}:${i} r${i} 30000 ${i % 2 ? 'r' : 'w'}`);
      pipeline.zadd(LockKeys.lineDeadlines(rwKey), far(), `c${i % 50}:${i} r${i} 30000 ${i % 2 ? 'r' : 'w'}`);
      pipeline.rpush(sem.line, `c${i % 50}:${i}`);
      pipeline.zadd(sem.deadlines, far(), `c${i % 50}:${i}`);
      pipeline.hset(sem.base, `w:c${i % 50}:${i}`, 1 + (i % 3));
    }
    await pipeline.exec();
    const rwInfo = await inspector.inspectReadWrite('rw-line', { waiterLimit: 50 });
    expect(rwInfo.waiterCount).toBe(120);
    expect(rwInfo.waiters!.map((waiter) => waiter.ownerId)).toEqual(Array.from({ length: 50 }, (_, i) => `c${i}:${i}`));
    expect(rwInfo.waiters![3].instance).toEqual(identity(3));
    expect((await app.get(ReadWriteLockService).inspect('rw-line')).waiters).toHaveLength(120);
    const semInfo = await inspector.inspectSemaphore('sem-line', { waiterLimit: 50 });
    expect(semInfo.waiterCount).toBe(120);
    expect(semInfo.waiters!.map((waiter) => [waiter.ownerId, waiter.permits])).toEqual(Array.from({ length: 50 }, (_, i) => [`c${i}:${i}`, 1 + (i % 3)]));
    expect((await app.get(SemaphoreService).inspect('sem-line')).waiters).toHaveLength(120);
    expect(await inspector.inspectSemaphore('sem-line')).not.toHaveProperty('waiterCount');

    // 2,000 tombstones before the live entries: the script looks at 10 * 50 + 1,000 entries at most.
    const lockKey = engine.keys.lock('tombstones');
    const lock = app.get(LockService).getLock('tombstones');
    await lock.lock({ leaseTime: 60_000 });
    const behind = raw.pipeline();
    for (let i = 0; i < 2_000; i++) behind.rpush(LockKeys.line(lockKey), `gone:${i} r 30000 f`);
    for (let i = 0; i < 10; i++) {
      behind.rpush(LockKeys.line(lockKey), `c${i}:${i} r 30000 f`);
      behind.zadd(LockKeys.lineDeadlines(lockKey), far(), `c${i}:${i} r 30000 f`);
    }
    await behind.exec();
    const hidden = await inspector.inspectLock('tombstones', 'reentrant', { waiterLimit: 50 });
    expect({ waiters: hidden.waiters, waiterCount: hidden.waiterCount }).toEqual({ waiters: [], waiterCount: 10 });
    expect((await inspector.inspectLock('tombstones', 'reentrant', { waiterLimit: 1_000 })).waiters).toHaveLength(10);
    await expect(inspector.inspectLock('tombstones', 'reentrant', { waiterLimit: 0 })).rejects.toThrow(/waiterLimit must be a positive integer/);
    await lock.forceUnlock();
    await rw.writeLock().forceUnlock();
    await semaphore.release();
  });

  it('the scripts read only the identity fields of an instance hash (HMGET), never its other fields', async () => {
    const lockKey = engine.keys.lock('identity');
    const lock = app.get(LockService).getLock('identity');
    await lock.lock({ leaseTime: 60_000 });
    await raw.rpush(LockKeys.line(lockKey), 'c1:1 r 30000 p');
    await raw.zadd(LockKeys.lineDeadlines(lockKey), far(), 'c1:1 r 30000 p');
    const reply = (await raw.eval(LUA_SOURCES['lock-inspect'], 3, lockKey, LockKeys.line(lockKey), LockKeys.lineDeadlines(lockKey), engine.instances.keyPrefix, 50)) as unknown[];
    const instances = reply[4] as unknown[];
    expect(instances[instances.indexOf('c1') + 1]).toEqual(['clientId', 'c1', 'clientName', 'client 1', 'host', 'host-a', 'pid', '1001', 'startedAt', '2024-01-01T00:00:00.000Z']);
    // The live-instance listing too: this app's own hash with a large field beside its identity.
    await raw.hset(engine.instances.key, 'contention', 'x'.repeat(20_000));
    const listed = (await raw.eval(LUA_SOURCES['instance-list'], 1, engine.instances.indexKey, 100, engine.instances.keyPrefix)) as [number, number, unknown[]];
    const fields = listed[2][listed[2].indexOf(engine.instances.self.clientId) + 2] as string[];
    expect(fields.filter((_, i) => i % 2 === 0)).toEqual(['clientId', 'clientName', 'host', 'pid', 'startedAt']);
    await lock.forceUnlock();
  });
});
