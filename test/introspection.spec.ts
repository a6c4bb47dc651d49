import { ChildProcess } from 'node:child_process';
import { hostname } from 'node:os';
import Redis from 'ioredis';
import { TestingModule } from '@nestjs/testing';
import { FairLockService, LockInfo, LockService, ReadWriteLockService, SemaphoreService } from '../lib';
import { LockEngine } from '../lib/runtime/lock-engine';
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
