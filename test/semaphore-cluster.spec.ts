import type { TestingModule } from '@nestjs/testing';
import calculateSlot from 'cluster-key-slot';
import type { Cluster } from 'ioredis';
import { SemaphoreService } from '../lib';
import { LockEngine } from '../lib/engine/lock-engine';
import { completion, spawnFixture } from './support/child-process';
import { createLockApp, waitUntil } from './support/lock-app';
import { describeOnCluster, namesOnEveryMaster, startRedisCluster, TestRedisCluster, shardSubscribers } from './support/redis-cluster';

/** Semaphores on a Redis Cluster of 3 masters: hash-tagged keys, sharded pub/sub, the watchdog per slot. */
describeOnCluster('semaphores on Redis Cluster (3 masters)', () => {
  const WATCHDOG_MS = 600;
  let cluster: TestRedisCluster;
  let raw: Cluster;
  let app: TestingModule;
  let other: TestingModule;
  const semKey = (name: string) => `lock:sem:{${name}}`;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    raw = cluster.cluster();
    app = await createLockApp({ redis: cluster.cluster(), watchdogTimeout: WATCHDOG_MS });
    other = await createLockApp({ redis: cluster.cluster(), watchdogTimeout: WATCHDOG_MS });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await cluster?.stop();
  });

  it('on every shard: one slot per semaphore, limits across instances, hand-off by sharded pub/sub, renewal, clean-up', async () => {
    const names = (await namesOnEveryMaster(cluster, 'cl-sem', 1, semKey)).map((group) => group[0]);
    const owners = await Promise.all(names.map((n) => cluster.masterOf(semKey(n))));
    expect(new Set(owners).size).toBe(3);
    await Promise.all(
      names.map(async (name, i) => {
        const semaphore = app.get(SemaphoreService).getSemaphore(name, { permits: 2 });
        const held = await Promise.all([semaphore.acquire(), semaphore.acquire()]);
        // The waiters of one process listen on the semaphore's channel plus its client id.
        const waiterChannel = (n: string) => `${semKey(n)}:channel:${other.get(LockEngine).ids.clientId}`;
        for (const suffix of ['', ':leases', ':line', ':deadlines', ':fence', ':channel']) {
          expect(calculateSlot(`${semKey(name)}${suffix}`)).toBe(calculateSlot(semKey(name)));
        }
        const waiting = other.get(SemaphoreService).getSemaphore(name, { permits: 2 }).acquire({ take: 2, waitTime: 60_000 });
        await waitUntil(async () => (await shardSubscribers(owners[i], waiterChannel(name))) === 1);
        // inspect asks the semaphore's own shard: both holders (from this instance) and the waiter.
        const info = await other.get(SemaphoreService).inspect(name);
        expect(info).toMatchObject({ name, kind: 'semaphore', permits: 2, available: 0 });
        expect(info.holders.map((h) => [h.ownerId, h.permits, h.fencingToken]).sort()).toEqual(
          held.map((p) => [p.ownerId, 1, p.fencingToken]).sort(),
        );
        expect(info.holders.every((h) => h.ttl > 0 && h.ttl <= WATCHDOG_MS)).toBe(true);
        expect(info.waiters).toEqual([{ ownerId: expect.any(String), permits: 2 }]);
        // Renewed past several leases while the waiter waits.
        const until = Date.now() + WATCHDOG_MS * 3;
        await waitUntil(() => Date.now() > until, 10_000, 50);
        expect(await semaphore.availablePermits()).toBe(0);
        expect(held.every((p) => !p.signal.aborted)).toBe(true);
        await held[0].release();
        const releasedAt = Date.now();
        await held[1].release();
        const next = await waiting;
        expect(Date.now() - releasedAt).toBeLessThan(1_000);
        expect(next.fencingToken).toBeGreaterThan(Math.max(...held.map((p) => p.fencingToken!)));
        await next.release();
        expect(await app.get(SemaphoreService).inspect(name)).toMatchObject({ permits: undefined, holders: [], waiters: [] });
        // The subscription is dropped with the last waiter.
        await waitUntil(async () => (await shardSubscribers(owners[i], waiterChannel(name))) === 0);
        expect(other.get(LockEngine).subscriber.hasWaiters(waiterChannel(name))).toBe(false);
        expect(await raw.exists(semKey(name))).toBe(0);
      }),
    );
  }, 90_000);

  it('across processes on every shard: never more than the limit inside', async () => {
    const names = (await namesOnEveryMaster(cluster, 'cl-sem-xp', 1, semKey)).map((group) => group[0]);
    const target = JSON.stringify(cluster.startupNodes);
    const children = names.flatMap((name) => [1, 2].map(() => spawnFixture('semaphore-worker', [target, name, '2', '4', '1500'])));
    const outputs = await Promise.all(children.map(completion));
    for (const name of names) {
      expect(await raw.get(`{${name}}:inside`)).toBe('0');
      expect(Number(await raw.get(`{${name}}:max-inside`))).toBeLessThanOrEqual(2);
      expect(Number(await raw.get(`{${name}}:max-inside`))).toBeGreaterThan(0);
    }
    const counts = outputs.flatMap((out) => JSON.parse(out.trim().split('\n').pop() as string) as number[]);
    expect(Math.min(...counts)).toBeGreaterThan(0);
  }, 90_000);
});
