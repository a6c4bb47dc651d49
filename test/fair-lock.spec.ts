import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import type { Cluster } from 'ioredis';
import { FairLockService, LockService } from '../lib';
import { LuaScript } from '../lib/redis/lua-script';
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
  const lineLength = (name: string) => raw.llen(lineKey(name));

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

  it('a waiter that gives up at the head of a free lock wakes the next one', async () => {
    // The race this covers (the head's last attempt fails, then the lock is freed, then the head
    // gives up) cannot be staged through the API, so the scripts are driven directly.
    const name = fresh();
    const keys = [`lock:{${name}}`, lineKey(name), `lock:{${name}}:deadlines`, `lock:{${name}}:fence`];
    const acquire = LuaScript.named('fair-acquire');
    const leave = LuaScript.named('fair-leave');
    const listener = redis.client();
    const messages: string[] = [];
    listener.on('pmessage', (_pattern: string, channel: string) => messages.push(channel));
    await listener.psubscribe(`lock:{${name}}:channel*`);
    try {
      expect(await acquire.run(raw, keys, [10_000, 'holder', 'rq-1', 10_000, 1, 60_000])).toEqual([expect.any(Number)]);
      await acquire.run(raw, keys, [10_000, 'head', 'rq-2', 10_000, 1, 60_000]);
      await acquire.run(raw, keys, [10_000, 'next', 'rq-3', 10_000, 1, 60_000]);
      expect(await line(name)).toEqual(['head', 'next']);
      await raw.del(keys[0]);
      expect(await leave.run(raw, keys.slice(0, 3), ['head', 'publish', `lock:{${name}}:channel:`, 'one'])).toBe(1);
      expect(await line(name)).toEqual(['next']);
      await waitUntil(() => messages.length === 1);
      expect(messages).toEqual([`lock:{${name}}:channel:next`]);
      // The woken head takes the lock; a waiter leaving a held lock's line wakes nobody.
      expect(await acquire.run(raw, keys, [10_000, 'next', 'rq-3', 10_000, 1, 60_000])).toEqual([expect.any(Number)]);
      await acquire.run(raw, keys, [10_000, 'last', 'rq-4', 10_000, 1, 60_000]);
      expect(await leave.run(raw, keys.slice(0, 3), ['last', 'publish', `lock:{${name}}:channel:`, 'one'])).toBe(1);
      expect(await leave.run(raw, keys.slice(0, 3), ['last', 'publish', `lock:{${name}}:channel:`, 'one'])).toBe(0);
      expect(await raw.exists(lineKey(name), keys[2])).toBe(0);
    } finally {
      listener.disconnect();
    }
    expect(messages).toHaveLength(1);
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
        expect(messages).toEqual(queued.slice(0, i + 1).map((owner) => `lock:{${name}}:channel:${owner}`));
        await waiter.unlock();
      }
      // Nobody left in line: the last release goes to the shared channel (plain-lock waiters).
      await waitUntil(() => messages.length === 4);
      expect(messages[3]).toBe(`lock:{${name}}:channel`);
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
    const keys = [`lock:{${name}}`, lineKey(name), `lock:{${name}}:deadlines`];
    const acquireKeys = [...keys, `lock:{${name}}:fence`];
    const acquire = LuaScript.named('fair-acquire');
    const release = LuaScript.named('fair-release');
    const [token] = (await acquire.run(raw, acquireKeys, [10_000, 'owner-a', 'rq-1', WAITER_TIMEOUT_MS, 1, 60_000])) as [number];
    expect(token).toBeGreaterThan(0);
    expect(await acquire.run(raw, acquireKeys, [10_000, 'owner-a', 'rq-1', WAITER_TIMEOUT_MS, 1, 60_000])).toEqual([token]);
    expect(await raw.hget(keys[0], 'owner-a')).toBe('1');
    // A resent wait does not queue twice.
    expect(await acquire.run(raw, acquireKeys, [10_000, 'owner-b', 'rq-2', WAITER_TIMEOUT_MS, 1, 60_000])).toBeGreaterThan(0);
    expect(await acquire.run(raw, acquireKeys, [10_000, 'owner-b', 'rq-2', WAITER_TIMEOUT_MS, 1, 60_000])).toBeGreaterThan(0);
    expect(await line(name)).toEqual(['owner-b']);
    const releaseCall = (requestId: string) =>
      release.run(raw, [...keys, `lock:{${name}}:rq:owner-a:${requestId}`], [
        'owner-a',
        10_000,
        'publish',
        `lock:{${name}}:channel:`,
        `lock:{${name}}:channel`,
        'one',
        '',
      ]);
    expect(await releaseCall('rq-3')).toBe(1);
    expect(await releaseCall('rq-3')).toBe(1); // the first answer, not "not held"
    expect(await releaseCall('rq-4')).toBeNull();
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
