import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import type { Cluster } from 'ioredis';
import { FairLockService, LockService } from '../lib';
import { LuaScript } from '../lib/redis/lua-script';
import { LockKeys } from '../lib/redis/lock-keys';
import { completion, printed, spawnFixture } from './support/child-process';
import { createLockApp, sleep, waitUntil } from './support/lock-app';
import { describeOnCluster, namesOnEveryMaster, startRedisCluster, TestRedisCluster } from './support/redis-cluster';
import { startRedis, TestRedis } from './support/redis-server';

/** Short, so a dead waiter drops out in about a second (heartbeats every third of it). */
const WAITER_TIMEOUT_MS = 1_000;
/** Ordering tests are not about eviction: a CPU-starved child must not drop out of line. */
const PATIENT_WAITER_TIMEOUT_MS = 10_000;

describe('fair lock', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let other: TestingModule; // a second module instance: another process, as far as Redis can tell
  let seq = 0;
  const fresh = () => `fair-${++seq}`;
  const lineKey = (name: string) => `lock:{${name}}:line`;
  const line = (name: string) => raw.lrange(lineKey(name), 0, -1);
  /** The live waiters: the line list keeps tombstones of those that left until they reach its head. */
  const lineLength = (name: string) => raw.zcard(`lock:{${name}}:deadlines`);

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, fairLockWaiterTimeout: WAITER_TIMEOUT_MS });
    other = await createLockApp({ redis: redis.url, fairLockWaiterTimeout: WAITER_TIMEOUT_MS });
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await redis?.stop();
  });

  it('FIFO: 10 waiters from 3 processes, asking in a known order, acquire in that order', async () => {
    const name = fresh();
    const orderKey = `${name}:order`;
    const holder = app.get(FairLockService).getLock(name);
    await holder.lock();
    // Waiter i runs in process i % 3 and asks only once waiters 0..i-1 are in line.
    const children = [0, 1, 2].map((p) =>
      spawnFixture('fair-waiters', [
        redis.url,
        name,
        String(PATIENT_WAITER_TIMEOUT_MS),
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].filter((i) => i % 3 === p).join(','),
        orderKey,
      ]),
    );
    const done = children.map(completion);
    await waitUntil(async () => (await lineLength(name)) === 10, 60_000);
    await holder.unlock();
    await Promise.all(done);
    expect((await raw.lrange(orderKey, 0, -1)).map(Number)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // The line leaves nothing behind.
    expect(await raw.exists(lineKey(name), `lock:{${name}}:deadlines`, `lock:{${name}}`)).toBe(0);
  }, 90_000);

  it('a waiter SIGKILLed at the head of the line delays the next by about fairLockWaiterTimeout at most', async () => {
    const name = fresh();
    const holder = app.get(FairLockService).getLock(name);
    await holder.lock();
    const child = spawnFixture('fair-waiters', [redis.url, name, String(WAITER_TIMEOUT_MS), '0', `${name}:order`]);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await printed(child, 'queued 0');
      const next = other.get(FairLockService).getLock(name);
      const acquired = next.tryLock({ waitTime: 20_000 });
      await waitUntil(async () => (await lineLength(name)) === 2);
      child.kill('SIGKILL');
      await exited;
      const releasedAt = Date.now();
      await holder.unlock();
      expect(await acquired).toBe(true);
      // Bounded by the dead waiter's deadline (1 s), not by the 20 s waitTime or the 30 s lease.
      expect(Date.now() - releasedAt).toBeLessThan(WAITER_TIMEOUT_MS * 5);
      expect(await lineLength(name)).toBe(0);
      await next.unlock();
    } finally {
      child.kill('SIGKILL');
    }
  }, 60_000);

  it('a live waiter keeps its place while waiting several times fairLockWaiterTimeout', async () => {
    const name = fresh();
    const holder = app.get(FairLockService).getLock(name);
    await holder.lock();
    const order: string[] = [];
    const first = other.get(FairLockService).getLock(name);
    const firstDone = first.tryLock({ waitTime: 20_000 }).then(async (ok) => {
      order.push(`first:${ok}`);
      await first.unlock();
    });
    await waitUntil(async () => (await lineLength(name)) === 1);
    const second = app.get(FairLockService).getLock(name);
    const secondDone = second.tryLock({ waitTime: 20_000 }).then(async (ok) => {
      order.push(`second:${ok}`);
      await second.unlock();
    });
    await waitUntil(async () => (await lineLength(name)) === 2);
    const queued = await line(name);
    // The behaviour under test is time passing: three waiter timeouts without a release.
    await sleep(WAITER_TIMEOUT_MS * 3);
    expect(await line(name)).toEqual(queued);
    await holder.unlock();
    await Promise.all([firstDone, secondDone]);
    expect(order).toEqual(['first:true', 'second:true']);
  }, 30_000);

  it('a waiter whose waitTime runs out leaves the line and does not block the ones behind', async () => {
    // A long waiter timeout: only the leaver removing itself can explain a prompt hand-off.
    const patient = await createLockApp({ redis: redis.url, fairLockWaiterTimeout: PATIENT_WAITER_TIMEOUT_MS * 2 });
    try {
      const name = fresh();
      const holder = patient.get(FairLockService).getLock(name);
      await holder.lock();
      const quitter = patient.get(FairLockService).getLock(name).tryLock({ waitTime: 300 });
      await waitUntil(async () => (await lineLength(name)) === 1);
      const behind = patient.get(FairLockService).getLock(name);
      const acquired = behind.tryLock({ waitTime: 15_000 });
      await waitUntil(async () => (await lineLength(name)) === 2);
      expect(await quitter).toBe(false);
      await waitUntil(async () => (await lineLength(name)) === 1);
      const releasedAt = Date.now();
      await holder.unlock();
      expect(await acquired).toBe(true);
      expect(Date.now() - releasedAt).toBeLessThan(5_000); // far below the 20 s waiter timeout
      await behind.unlock();
    } finally {
      await patient.close();
    }
  });

  it('a waiter that gives up holding a lock a release handed it passes the lock to the next one', async () => {
    // The race this covers (the head is handed the lock, then gives up before hearing of it) cannot
    // be staged through the API, so the scripts are driven directly.
    const name = fresh();
    const lockKey = `lock:{${name}}`;
    const keys = [lockKey, ...LockKeys.lineKeys(lockKey)];
    const acquire = LuaScript.named('reentrant-acquire');
    const release = LuaScript.named('reentrant-release');
    const leave = LuaScript.named('line-leave');
    const entry = (owner: string, requestId: string) => `${owner} ${requestId} 10000 f`;
    const attempt = (owner: string, requestId: string) =>
      acquire.run(raw, keys, [10_000, owner, requestId, 60_000, entry(owner, requestId), 10_000, 'publish', 'one']);
    const listener = redis.client();
    const messages: string[] = [];
    listener.on('pmessage', (_pattern: string, channel: string, message: string) => messages.push(`${channel} ${message}`));
    await listener.psubscribe(`${lockKey}:channel*`);
    try {
      expect(await attempt('holder', 'rq-1')).toEqual([expect.any(Number)]);
      expect(await attempt('head', 'rq-2')).toBeGreaterThan(0);
      expect(await attempt('next', 'rq-3')).toBeGreaterThan(0);
      expect(await line(name)).toEqual([entry('head', 'rq-2'), entry('next', 'rq-3')]);
      // The release hands the lock to the head, inside the script, and names it on its channel.
      const releaseArgs = ['holder', 10_000, 'publish', 'one', '', 10_000, 60_000];
      expect(await release.run(raw, [lockKey, `${lockKey}:rq:holder:x`, ...LockKeys.lineKeys(lockKey)], releaseArgs)).toBe(1);
      expect(await raw.hget(lockKey, 'head')).toBe('1');
      expect(await line(name)).toEqual([entry('next', 'rq-3')]);
      await waitUntil(() => messages.length === 1);
      expect(messages[0]).toMatch(new RegExp(`^${lockKey.replace(/[{}]/g, '\\$&')}:channel:head granted:head rq-2 10000 f \\d+ - \\d+ 10000$`));
      // The head gives up before it heard: leaving gives the lock back, and the next one gets it.
      const leaveArgs = (owner: string, requestId: string) => [entry(owner, requestId), owner, requestId, 'publish', 'one', 10_000, 60_000];
      expect(await leave.run(raw, keys, leaveArgs('head', 'rq-2'))).toBe(1);
      expect(await raw.hexists(lockKey, 'head')).toBe(0);
      expect(await raw.hget(lockKey, 'next')).toBe('1');
      await waitUntil(() => messages.length === 2);
      expect(messages[1]).toContain(`:channel:next granted:next rq-3`);
      // Its own late attempt finds the grant (same request id: no second hold) and gets its full lease.
      expect(await attempt('next', 'rq-3')).toEqual([expect.any(Number)]);
      expect(await raw.hget(lockKey, 'next')).toBe('1');
      expect(await raw.pttl(lockKey)).toBeGreaterThan(9_000);
      // A waiter leaving a held lock's line hands nothing over; leaving twice finds nothing.
      await attempt('last', 'rq-4');
      expect(await leave.run(raw, keys, leaveArgs('last', 'rq-4'))).toBe(1);
      expect(await leave.run(raw, keys, leaveArgs('last', 'rq-4'))).toBe(0);
      expect(await raw.exists(lineKey(name), `${lockKey}:deadlines`, `${lockKey}:seen`)).toBe(0);
    } finally {
      listener.disconnect();
    }
    expect(messages).toHaveLength(2);
  });

  it('tryLock with waitTime 0 never joins the line', async () => {
    const name = fresh();
    const holder = app.get(FairLockService).getLock(name);
    await holder.lock();
    expect(await other.get(FairLockService).getLock(name).tryLock({ waitTime: 0 })).toBe(false);
    expect(await other.get(FairLockService).getLock(name).tryLock()).toBe(false);
    expect(await raw.exists(lineKey(name))).toBe(0);
    await holder.unlock();
  });

  it('a release wakes only the head of the line, on its own channel', async () => {
    const name = fresh();
    const listener = redis.client();
    const messages: string[] = [];
    listener.on('pmessage', (_pattern: string, channel: string) => messages.push(channel));
    await listener.psubscribe(`lock:{${name}}:channel*`);
    try {
      const holder = app.get(FairLockService).getLock(name);
      await holder.lock();
      const waiters = [app, other, app].map((m) => m.get(FairLockService).getLock(name));
      const acquisitions: Promise<boolean>[] = [];
      for (const [i, waiter] of waiters.entries()) {
        acquisitions.push(waiter.tryLock({ waitTime: 10_000 }));
        await waitUntil(async () => (await lineLength(name)) === i + 1);
      }
      const queued = await line(name);
      await holder.unlock();
      for (const [i, waiter] of waiters.entries()) {
        expect(await acquisitions[i]).toBe(true);
        await waitUntil(() => messages.length === i + 1);
        expect(messages).toEqual(queued.slice(0, i + 1).map((entry) => `lock:{${name}}:channel:${entry.split(' ')[0]}`));
        await waiter.unlock();
      }
      // Nobody left in line: the last release, whose hold had a line behind it, wakes the lock's own
      // channel once (a waiter the line dropped while alive would hear it); a message published after
      // it answered arrives after anything it published (one Redis, in order).
      await raw.publish(`lock:{${name}}:channel:marker`, 'after');
      await waitUntil(() => messages.includes(`lock:{${name}}:channel:marker`));
      expect(messages.slice(3)).toEqual([`lock:{${name}}:channel`, `lock:{${name}}:channel:marker`]);
    } finally {
      listener.disconnect();
    }
  });

  it('the fair and the plain lock of one name are one lock: they exclude each other', async () => {
    const name = fresh();
    const plain = app.get(LockService).getLock(name);
    await plain.lock();
    expect(await other.get(FairLockService).getLock(name).tryLock({ waitTime: 50 })).toBe(false);
    expect(await app.get(FairLockService).getLock(name).isLocked()).toBe(true);
    await plain.unlock();
    const fair = other.get(FairLockService).getLock(name);
    expect(await fair.tryLock()).toBe(true);
    expect(await app.get(LockService).getLock(name).tryLock()).toBe(false);
    await fair.unlock();
  });

  it('inside a run of the plain lock, the fair lock of the same name re-enters', async () => {
    const name = fresh();
    const count = await app.get(LockService).run(name, () =>
      app.get(FairLockService).run(name, async () => app.get(FairLockService).getLock(name).getHoldCount()),
    );
    expect(count).toBe(2);
  });

  it('a resent acquire or release (same request id) does not change the outcome', async () => {
    const name = fresh();
    const lockKey = `lock:{${name}}`;
    const acquireKeys = [lockKey, ...LockKeys.lineKeys(lockKey)];
    const acquire = LuaScript.named('reentrant-acquire');
    const release = LuaScript.named('reentrant-release');
    const attempt = (owner: string, requestId: string) =>
      acquire.run(raw, acquireKeys, [10_000, owner, requestId, 60_000, `${owner} ${requestId} 10000 f`, WAITER_TIMEOUT_MS, 'publish', 'one']);
    const [token] = (await attempt('owner-a', 'rq-1')) as [number];
    expect(token).toBeGreaterThan(0);
    expect(await attempt('owner-a', 'rq-1')).toEqual([token]);
    expect(await raw.hget(lockKey, 'owner-a')).toBe('1');
    // A resent wait does not queue twice.
    expect(await attempt('owner-b', 'rq-2')).toBeGreaterThan(0);
    expect(await attempt('owner-b', 'rq-2')).toBeGreaterThan(0);
    expect(await line(name)).toEqual(['owner-b rq-2 10000 f']);
    const releaseCall = (requestId: string) =>
      release.run(raw, [lockKey, `${lockKey}:rq:owner-a:${requestId}`, ...LockKeys.lineKeys(lockKey)], ['owner-a', 10_000, 'publish', 'one', '', WAITER_TIMEOUT_MS, 60_000]);
    expect(await releaseCall('rq-3')).toBe(1);
    expect(await releaseCall('rq-3')).toBe(1); // the first answer, not "not held"
    expect(await releaseCall('rq-4')).toBeNull();
    // The release handed the lock to owner-b; its resent attempt finds that grant, once.
    expect(await attempt('owner-b', 'rq-2')).toEqual([expect.any(Number)]);
    expect(await raw.hget(lockKey, 'owner-b')).toBe('1');
  });

  it('3 processes x 20 non-atomic increments under FairLockService.run lose no update', async () => {
    const name = fresh();
    const children = [1, 2, 3].map(() => spawnFixture('counter-worker', [redis.url, 'fair', name, '20']));
    await Promise.all(children.map(completion));
    expect(Number(await raw.get(`counter:fair:${name}`))).toBe(60);
  }, 90_000);
});

describeOnCluster('fair lock on a 3-master cluster', () => {
  let cluster: TestRedisCluster;
  let rawCluster: Cluster;
  let app: TestingModule;
  let other: TestingModule;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    rawCluster = cluster.cluster();
    app = await createLockApp({ redis: cluster.cluster(), fairLockWaiterTimeout: WAITER_TIMEOUT_MS });
    other = await createLockApp({ redis: cluster.cluster(), fairLockWaiterTimeout: WAITER_TIMEOUT_MS });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await cluster?.stop();
  });

  it('hands off to the head of the line by sharded pub/sub on every master', async () => {
    const groups = await namesOnEveryMaster(cluster, 'fair-cluster', 1, (name) => `lock:{${name}}`);
    for (const name of groups.flat()) {
      const holder = app.get(FairLockService).getLock(name);
      await holder.lock({ leaseTime: 10_000 });
      const first = other.get(FairLockService).getLock(name);
      const second = app.get(FairLockService).getLock(name);
      const firstIn = first.tryLock({ waitTime: 8_000 });
      await waitUntil(async () => (await rawCluster.llen(`lock:{${name}}:line`)) === 1);
      const secondIn = second.tryLock({ waitTime: 8_000 });
      await waitUntil(async () => (await rawCluster.llen(`lock:{${name}}:line`)) === 2);
      const releasedAt = Date.now();
      await holder.unlock();
      expect(await firstIn).toBe(true);
      expect(Date.now() - releasedAt).toBeLessThan(3_000); // woken, not the 10 s lease running out
      await first.unlock();
      expect(await secondIn).toBe(true);
      await second.unlock();
    }
  }, 60_000);
});
