import type { INestApplication } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import type { Cluster } from 'ioredis';
import { FairLockService, LockModule, LockService, ReadWriteLockService, type LockInfo } from '../../lib';
import { LockBoardModule } from '../../lib/board';
import type { BoardSnapshot } from '../../lib/board/board-snapshots';
import { RedissonNames } from '../../lib/layouts/redisson-names';
import { REDISSON_BOARD_FORCE_RELEASE } from '../../lib/messages/redisson.messages';
import { LockEngine } from '../../lib/engine/lock-engine';
import { LockTestingControls, LockTestingModule } from '../../lib/testing';
import { SimulatedNetwork } from '../../lib/testing/simulated-network';
import { AUTH, startBoardApp, TokenGuard } from '../board/board-app';
import { createLockApp, deferred, waitUntil } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';
import { describeOnCluster, namesOnEveryMaster, startRedisCluster, type TestRedisCluster } from '../support/redis-cluster';

/**
 * `inspect`, `list`, the lock board and the kit's `loseLock` in layout 'redisson', on a real Redis:
 * holders of Redisson's keys, Node ones (two module instances, attributed to their instances) and
 * "Java" ones written with Redisson's raw effects (shared/redisson-layout.md §3-§5: owner fields of
 * another client id, a fair queue with client-clock deadlines, a reader's timeout key).
 */
const WATCHDOG_MS = 1_500;
const JAVA = '0b5e2d7c-9a41-4f3e-8c1d-2e3f4a5b6c7d';

describe('introspection in layout redisson', () => {
  let redis: TestRedis;
  let raw: Redis;
  let apps: TestingModule[];
  let one: { locks: LockService; fair: FairLockService; rw: ReadWriteLockService };
  let two: { locks: LockService; fair: FairLockService; rw: ReadWriteLockService; clientId: string };
  let n = 0;
  const fresh = (what: string): string => `insp-${what}-${++n}`;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    apps = await Promise.all([1, 2].map(() => createLockApp({ redis: redis.url, layout: 'redisson', watchdogTimeout: WATCHDOG_MS })));
    const services = apps.map((app) => ({ locks: app.get(LockService), fair: app.get(FairLockService), rw: app.get(ReadWriteLockService) }));
    one = services[0];
    two = { ...services[1], clientId: apps[1].get(LockEngine).instances.self.clientId };
  });
  afterAll(async () => {
    await Promise.all(apps?.map((app) => app.close()) ?? []);
    await redis?.stop();
  });

  /** A Java RLock hold: Redisson's acquire effect (RL §3.1) for owner `<JAVA>:<thread>`. */
  const javaHolds = async (key: string, thread: number, count = 1): Promise<void> => {
    await raw.hincrby(key, `${JAVA}:${thread}`, count);
    await raw.pexpire(key, 30_000);
  };

  it('a Node holder of the plain lock: owner field, count and instance of the module that holds it; no heldSince, no token', async () => {
    const name = fresh('plain');
    const lock = two.locks.getLock(name);
    await lock.lock();
    await lock.lock();
    const [owner] = Object.keys(await raw.hgetall(name));
    const info = await one.locks.inspect(name);
    expect(info).toMatchObject({ name, kind: 'reentrant', locked: true, holders: [{ ownerId: owner, holdCount: 2, instance: { clientId: two.clientId } }] });
    expect(info.ttl).toBeGreaterThan(0);
    expect(info.ttl).toBeLessThanOrEqual(WATCHDOG_MS);
    expect(info.holders[0].heldSince).toBeUndefined();
    expect(info.fencingToken).toBeUndefined();
    expect(info.serverTime).toBeGreaterThan(0);
    await lock.unlock();
    await lock.unlock();
    expect(await one.locks.inspect(name)).toMatchObject({ locked: false, ttl: -2, holders: [] });
  });

  it('a Java holder: owner id and count only, no instance', async () => {
    const name = fresh('java');
    await javaHolds(name, 57, 3);
    const info = await one.locks.inspect(name);
    expect(info).toMatchObject({ kind: 'reentrant', locked: true, holders: [{ ownerId: `${JAVA}:57`, holdCount: 3 }] });
    expect(info.holders[0].instance).toBeUndefined();
    // The lock it shows is the one a Node caller meets.
    expect(await one.locks.getLock(name).tryLock()).toBe(false);
  });

  it('a fair lock: the holder, then the queue in order with its deadlines, Node waiters attributed, Java ones not', async () => {
    const name = fresh('fair');
    const queue = RedissonNames.fairQueue(name);
    await javaHolds(name, 1);
    const fairLock = two.fair.getLock(name);
    const waiting = fairLock.tryLock({ waitTime: 20_000 });
    await waitUntil(async () => (await raw.llen(queue)) === 1);
    // A Java waiter behind it (RL §4.3 step 5: RPUSH and a deadline on the Java client's clock).
    const javaDeadline = Date.now() + 600_000;
    await raw.zadd(RedissonNames.fairTimeouts(name), javaDeadline, `${JAVA}:9`);
    await raw.rpush(queue, `${JAVA}:9`);
    const [nodeWaiter] = await raw.lrange(queue, 0, 0);
    const info = await one.fair.inspect(name);
    expect(info).toMatchObject({ kind: 'fair', locked: true, holders: [{ ownerId: `${JAVA}:1`, holdCount: 1 }] });
    expect(info.waiters).toHaveLength(2);
    expect(info.waiters![0]).toMatchObject({ ownerId: nodeWaiter, instance: { clientId: two.clientId } });
    expect(info.waiters![0].deadline).toBe(Number(await raw.zscore(RedissonNames.fairTimeouts(name), nodeWaiter)));
    expect(info.waiters![1]).toEqual({ ownerId: `${JAVA}:9`, deadline: javaDeadline });
    // LockService.inspect of the same name sees the queue too: plain and fair share the hash.
    expect((await one.locks.inspect(name)).kind).toBe('fair');
    // The Java holder leaves (RL §4.5: DEL, wake the head on its own channel): the Node waiter gets in.
    await raw.del(name);
    await raw.publish(`${RedissonNames.lockChannel(name)}:${nodeWaiter}`, '0');
    await expect(waiting).resolves.toBe(true);
    await raw.del(queue, RedissonNames.fairTimeouts(name));
    await fairLock.unlock();
  });

  it('a read-write lock: a Node and a Java reader with their timeout-key TTLs, then a writer (owner without :write)', async () => {
    const name = fresh('rw');
    const read = two.rw.getReadWriteLock(name).readLock();
    await read.lock();
    // A Java reader beside it (RL §5.1): its count and its timeout key {N}:<owner>:rwlock_timeout:1.
    await raw.hincrby(name, `${JAVA}:4`, 1);
    await raw.set(`${RedissonNames.readTimeoutPrefix(name, `${JAVA}:4`)}:1`, '1', 'PX', 20_000);
    const info = await one.rw.inspect(name);
    expect(info).toMatchObject({ kind: 'read-write', locked: true, mode: 'read' });
    const byOwner = new Map(info.holders.map((holder) => [holder.ownerId, holder]));
    expect(byOwner.get(`${JAVA}:4`)).toMatchObject({ holdCount: 1, mode: 'read' });
    expect(byOwner.get(`${JAVA}:4`)!.instance).toBeUndefined();
    expect(byOwner.get(`${JAVA}:4`)!.ttl).toBeGreaterThan(WATCHDOG_MS);
    const node = info.holders.find((holder) => holder.ownerId !== `${JAVA}:4`)!;
    expect(node).toMatchObject({ holdCount: 1, mode: 'read', instance: { clientId: two.clientId } });
    expect(node.ttl).toBeGreaterThan(0);
    expect(node.ttl).toBeLessThanOrEqual(WATCHDOG_MS);
    // LockService.inspect of the name reports the kind its key holds.
    expect((await one.locks.inspect(name)).kind).toBe('read-write');
    await read.unlock();
    await raw.del(name, `${RedissonNames.readTimeoutPrefix(name, `${JAVA}:4`)}:1`);

    const write = two.rw.getReadWriteLock(name).writeLock();
    await write.lock();
    const [writerField] = Object.keys(await raw.hgetall(name)).filter((field) => field !== 'mode');
    const written = await one.rw.inspect(name);
    expect(written).toMatchObject({ kind: 'read-write', locked: true, mode: 'write' });
    expect(written.holders).toEqual([{ ownerId: writerField.replace(/:write$/, ''), holdCount: 1, mode: 'write', instance: expect.objectContaining({ clientId: two.clientId }) }]);
    await write.unlock();
  });

  it('ReadWriteLockService.inspect of a name a plain lock holds reports the plain lock', async () => {
    const name = fresh('clash');
    await javaHolds(name, 2);
    expect(await one.rw.inspect(name)).toMatchObject({ kind: 'reentrant', locked: true, holders: [{ ownerId: `${JAVA}:2` }] });
  });

  it('list: every kind held on the server, Java and Node holders; other hashes are skipped; match applies to keys', async () => {
    const tag = `list${++n}`;
    await javaHolds(`${tag}:java`, 3);
    const plain = two.locks.getLock(`${tag}:node`);
    await plain.lock();
    const read = two.rw.getReadWriteLock(`${tag}:rw`).readLock();
    await read.lock();
    await javaHolds(`${tag}:fair`, 5);
    await raw.zadd(RedissonNames.fairTimeouts(`${tag}:fair`), Date.now() + 60_000, `${JAVA}:6`);
    await raw.rpush(RedissonNames.fairQueue(`${tag}:fair`), `${JAVA}:6`);
    // Not Redisson's locks: an app's hash, a hash with an owner-like field beside another one.
    await raw.hset(`${tag}:profile`, 'email', 'a@b.c');
    await raw.hset(`${tag}:mixed`, `${JAVA}:1`, '1', 'note', 'x');
    await raw.set(`${tag}:string`, '1');

    const listed: LockInfo[] = [];
    for await (const info of one.locks.list({ match: `${tag}:*`, count: 5 })) listed.push(info);
    const byName = new Map(listed.map((info) => [info.name, info]));
    expect([...byName.keys()].sort()).toEqual([`${tag}:fair`, `${tag}:java`, `${tag}:node`, `${tag}:rw`]);
    expect(byName.get(`${tag}:java`)).toMatchObject({ kind: 'reentrant', holders: [{ ownerId: `${JAVA}:3`, holdCount: 1 }] });
    expect(byName.get(`${tag}:node`)).toMatchObject({ kind: 'reentrant', holders: [{ instance: { clientId: two.clientId } }] });
    expect(byName.get(`${tag}:rw`)).toMatchObject({ kind: 'read-write', mode: 'read', holders: [{ mode: 'read', instance: { clientId: two.clientId } }] });
    expect(byName.get(`${tag}:fair`)).toMatchObject({ kind: 'fair', waiters: [{ ownerId: `${JAVA}:6` }] });
    await plain.unlock();
    await read.unlock();
  });
});

describe('introspection in layout redisson with a nameMapper and fenced locks', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let locks: LockService;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, layout: 'redisson', redisson: { nameMapper: (name) => `app:${name}`, fencedLocks: true } });
    locks = app.get(LockService);
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it("inspect reports the caller's name and the last token handed out; list reports mapped keys", async () => {
    const lock = locks.getLock('order:1');
    await lock.lock();
    const token = lock.getFencingToken();
    expect(await raw.get(RedissonNames.fenceToken('app:order:1'))).toBe(String(token));
    const info = await locks.inspect('order:1');
    expect(info).toMatchObject({ name: 'order:1', kind: 'reentrant', locked: true, fencingToken: token });
    const listed: LockInfo[] = [];
    for await (const found of locks.list({ match: 'app:order:*' })) listed.push(found);
    expect(listed.map((found) => found.name)).toEqual(['app:order:1']);
    // Its token key derives from the mapped key, so list reports the same token.
    expect(listed[0].fencingToken).toBe(token);
    await lock.unlock();
    expect(await locks.inspect('order:1')).toMatchObject({ locked: false, holders: [] });
  });
});

describe('lock board in layout redisson (express)', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    ({ app, url } = await startBoardApp('express', { redis: redis.url, layout: 'redisson', clientName: 'board-app' }, { refreshMs: 250 }));
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  const snapshot = async (): Promise<BoardSnapshot> => {
    const response = await fetch(`${url}/api/lock-board/api/snapshot`, { headers: AUTH });
    expect(response.status).toBe(200);
    return (await response.json()) as BoardSnapshot;
  };

  it('shows Node and Java holders of every kind, skips other hashes, and forgets a lock once released', async () => {
    const locks = app.get(LockService);
    const node = locks.getLock('order:42');
    await node.lock();
    await raw.hincrby('java-lock', `${JAVA}:7`, 2);
    await raw.pexpire('java-lock', 30_000);
    await raw.hset('profile:1', 'name', 'x');
    const read = app.get(ReadWriteLockService).getReadWriteLock('catalog').readLock();
    await read.lock();
    await waitUntil(async () => (await snapshot()).locks.length === 3, 5_000);
    const shown = new Map((await snapshot()).locks.map((info) => [info.name, info]));
    expect([...shown.keys()].sort()).toEqual(['catalog', 'java-lock', 'order:42']);
    expect(shown.get('order:42')).toMatchObject({ kind: 'reentrant', holders: [{ instance: { clientName: 'board-app' } }] });
    expect(shown.get('java-lock')).toMatchObject({ kind: 'reentrant', holders: [{ ownerId: `${JAVA}:7`, holdCount: 2 }] });
    expect(shown.get('java-lock')!.holders[0].instance).toBeUndefined();
    expect(shown.get('catalog')).toMatchObject({ kind: 'read-write', mode: 'read' });
    expect((await snapshot()).forceRelease).toBe(false);
    await node.unlock();
    await waitUntil(async () => !(await snapshot()).locks.some((info) => info.name === 'order:42'), 5_000);
    await read.unlock();
  });
});

describe('lock board start in layout redisson', () => {
  it('allowForceRelease: true fails the start with the layout text', async () => {
    const redis = await startRedis();
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [
          LockModule.forRoot({ redis: redis.url, layout: 'redisson' }),
          LockBoardModule.forRoot({ guard: TokenGuard, allowForceRelease: true }),
        ],
      }).compile();
      moduleRef.useLogger(false);
      const app = moduleRef.createNestApplication({ logger: false });
      await expect(app.init()).rejects.toThrow(REDISSON_BOARD_FORCE_RELEASE);
      await app.close().catch(() => undefined);
    } finally {
      await redis.stop();
    }
  });
});

describe('testing kit in layout redisson', () => {
  let moduleRef: TestingModule;
  let controls: LockTestingControls;

  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({ imports: [LockTestingModule.forRoot({ layout: 'redisson', watchdogTimeout: 600 })] }).compile();
    moduleRef.useLogger(false);
    await moduleRef.init();
    controls = moduleRef.get(LockTestingControls);
  });
  afterAll(() => moduleRef?.close());

  it('inspect runs on the kit; loseLock deletes the name\'s Redisson keys: the holder learns at the watchdog round, other names stay', async () => {
    const locks = moduleRef.get(LockService);
    const other = locks.getLock('kept');
    await other.lock();
    const lost = deferred<unknown>();
    const running = locks.run('lost', async (context) => {
      context.signal.addEventListener('abort', () => lost.resolve(context.signal.reason), { once: true });
      await lost.promise;
    });
    await waitUntil(async () => (await locks.inspect('lost')).locked);
    expect((await locks.inspect('lost')).holders[0].instance?.clientId).toBe(moduleRef.get(LockEngine).instances.self.clientId);
    await controls.loseLock('lost');
    expect((await locks.inspect('lost')).locked).toBe(false);
    expect((await lost.promise as Error).name).toBe('LockLostError');
    await running;
    expect((await locks.inspect('kept')).locked).toBe(true);
    await other.unlock();
  });

  it("loseLock on a read-write lock takes the readers' timeout keys too", async () => {
    const rw = moduleRef.get(ReadWriteLockService);
    const read = rw.getReadWriteLock('shelf').readLock();
    await read.lock();
    expect((await rw.inspect('shelf')).holders[0].ttl).toBeGreaterThan(0);
    const timeoutKeys = (): string[] => {
      const [server] = moduleRef.get(SimulatedNetwork, { strict: false }).all();
      return server.keyspace.keys(server.now()).filter((key) => key.includes(':rwlock_timeout:'));
    };
    expect(timeoutKeys()).toHaveLength(1);
    await controls.loseLock('shelf');
    expect(timeoutKeys()).toEqual([]);
    expect((await rw.inspect('shelf')).locked).toBe(false);
    // A new reader starts from nothing: count 1, one timeout key.
    const again = rw.getReadWriteLock('shelf').readLock();
    await again.lock();
    const info = await rw.inspect('shelf');
    expect(info.holders).toHaveLength(1);
    expect(info.holders[0]).toMatchObject({ holdCount: 1, mode: 'read' });
    await again.unlock();
  });
});

describeOnCluster('introspection in layout redisson on a 3-master cluster', () => {
  let servers: TestRedisCluster;
  let raw: Cluster;
  let app: TestingModule;
  let clientId: string;

  beforeAll(async () => {
    servers = await startRedisCluster(3);
    raw = servers.cluster();
    app = await createLockApp({ redis: servers.cluster(), layout: 'redisson', watchdogTimeout: WATCHDOG_MS });
    clientId = app.get(LockEngine).instances.self.clientId;
  });
  afterAll(async () => {
    await app?.close();
    await servers?.stop();
  });

  it("inspect attributes Node holders (instance records in other slots) and reads readers' timeout keys; list walks every master", async () => {
    const names = (await namesOnEveryMaster(servers, 'cl', 1, (name) => name)).flat();
    const locks = app.get(LockService);
    const rw = app.get(ReadWriteLockService);
    const plain = locks.getLock(names[0]);
    await plain.lock();
    const read = rw.getReadWriteLock(names[1]).readLock();
    await read.lock();
    await raw.hincrby(names[2], `${JAVA}:8`, 1);
    await raw.pexpire(names[2], 30_000);

    expect(await locks.inspect(names[0])).toMatchObject({ locked: true, holders: [{ holdCount: 1, instance: { clientId } }] });
    const readInfo = await rw.inspect(names[1]);
    expect(readInfo).toMatchObject({ kind: 'read-write', mode: 'read', holders: [{ mode: 'read', instance: { clientId } }] });
    expect(readInfo.holders[0].ttl).toBeGreaterThan(0);
    const javaInfo = await locks.inspect(names[2]);
    expect(javaInfo.holders).toEqual([{ ownerId: `${JAVA}:8`, holdCount: 1 }]);

    const listed: LockInfo[] = [];
    for await (const info of locks.list({ match: 'cl-*' })) listed.push(info);
    expect(listed.map((info) => info.name).sort()).toEqual([...names].sort());
    await plain.unlock();
    await read.unlock();
  });
});
