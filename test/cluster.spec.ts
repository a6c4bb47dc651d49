import type { TestingModule } from '@nestjs/testing';
import calculateSlot from 'cluster-key-slot';
import type { Cluster } from 'ioredis';
import { FairLockService, Lock, LockLostError, LockService, LockUnavailableError, ReadWriteLockService } from '../lib';
import { LockEngine } from '../lib/engine/lock-engine';
import { completion, spawnFixture } from './support/child-process';
import { createLockApp, deferred, sleep, waitUntil } from './support/lock-app';
import { describeOnCluster, namesOnEveryMaster, startRedisCluster, TestRedisCluster, shardSubscribers } from './support/redis-cluster';

/**
 * Every lock kind on a Redis Cluster of 3 masters, through an ioredis `Cluster` passed to forRoot.
 * Names are chosen so their slots land on each master in turn.
 */
describeOnCluster('Redis Cluster (3 masters)', () => {
  const WATCHDOG_MS = 600;
  let cluster: TestRedisCluster;
  let raw: Cluster;
  let app: TestingModule;
  let other: TestingModule;
  let seq = 0;
  const lockKey = (name: string) => `lock:{${name}}`;
  const rwKey = (name: string) => `lock:rw:{${name}}`;
  /** One fresh name per master, for the given key layout. */
  const spread = async (label: string, keyOf = lockKey) =>
    (await namesOnEveryMaster(cluster, `cl-${label}-${++seq}`, 1, keyOf)).map((group) => group[0]);

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    raw = cluster.cluster();
    app = await createLockApp({ redis: cluster.cluster(), watchdogTimeout: WATCHDOG_MS });
    other = await createLockApp({ redis: cluster.cluster(), watchdogTimeout: WATCHDOG_MS });
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await cluster?.stop();
  });

  /** The channel on which `other`'s waiters of a lock listen: the lock's channel plus its client id. */
  const waiterChannel = (key: string) => `${key}:channel:${other.get(LockEngine).ids.clientId}`;

  it('keeps every key of a lock in one slot, on the master that owns it', async () => {
    const names = await spread('slot');
    const owners = await Promise.all(names.map((n) => cluster.masterOf(lockKey(n))));
    expect(new Set(owners).size).toBe(3);
    await Promise.all(
      names.map(async (name, i) => {
        const lock = app.get(LockService).getLock(name);
        await lock.lock();
        const direct = owners[i].client();
        expect(await direct.hexists(lockKey(name), (lock as unknown as { ownerId: string }).ownerId)).toBe(1);
        direct.disconnect();
        expect(calculateSlot(`${lockKey(name)}:channel`)).toBe(calculateSlot(lockKey(name)));
        await lock.unlock();
      }),
    );
  });

  it('excludes across module instances on every shard, and re-enters', async () => {
    for (const name of await spread('excl')) {
      const first = app.get(LockService).getLock(name);
      await first.lock();
      await first.lock();
      expect(await first.getHoldCount()).toBe(2);
      expect(await other.get(LockService).getLock(name).tryLock({ waitTime: 50 })).toBe(false);
      await first.unlock();
      await first.unlock();
      expect(await raw.exists(lockKey(name))).toBe(0);
      const second = other.get(LockService).getLock(name);
      expect(await second.tryLock()).toBe(true);
      await second.unlock();
    }
  });

  it('hands off by sharded pub/sub on every shard: the waiter gets the lock right after unlock', async () => {
    const names = await spread('handoff');
    await Promise.all(
      names.map(async (name) => {
        const holder = app.get(LockService).getLock(name);
        await holder.lock({ leaseTime: 10_000 });
        const acquired = other.get(LockService).getLock(name).tryLock({ waitTime: 8_000 });
        // The waiter's SSUBSCRIBE reached the master that owns the lock's slot.
        const master = await cluster.masterOf(lockKey(name));
        await waitUntil(async () => (await shardSubscribers(master, waiterChannel(lockKey(name)))) === 1);
        const releasedAt = Date.now();
        await holder.unlock();
        expect(await acquired).toBe(true);
        expect(Date.now() - releasedAt).toBeLessThan(1_000); // far below the 10 s lease
      }),
    );
    // The subscriptions are dropped once nobody waits.
    for (const name of names) {
      const master = await cluster.masterOf(lockKey(name));
      await waitUntil(async () => (await shardSubscribers(master, waiterChannel(lockKey(name)))) === 0);
      await other.get(LockService).getLock(name).forceUnlock();
    }
  });

  it('the watchdog renews locks on every shard (one batch per slot) past their lease', async () => {
    const names = await spread('watchdog');
    const held = names.map((name) => app.get(LockService).getLock(name));
    await Promise.all(held.map((lock) => lock.lock()));
    const until = Date.now() + WATCHDOG_MS * 4;
    while (Date.now() < until) {
      expect(await Promise.all(names.map((n) => raw.exists(lockKey(n))))).toEqual([1, 1, 1]);
      await sleep(WATCHDOG_MS / 4);
    }
    await Promise.all(held.map((lock) => lock.unlock()));
  });

  it('signals a lock deleted behind its holder on a shard', async () => {
    const [name] = await spread('lost');
    const gate = deferred();
    let seen: AbortSignal | undefined;
    const running = app.get(LockService).run(name, async ({ signal }) => {
      seen = signal;
      await gate.promise;
      return 'done';
    });
    await waitUntil(() => seen !== undefined);
    await raw.del(lockKey(name));
    await waitUntil(() => seen!.aborted, WATCHDOG_MS * 5);
    expect(seen!.reason).toBeInstanceOf(LockLostError);
    gate.resolve();
    await expect(running).resolves.toBe('done');
  });

  it('a multi-lock spans shards: all or nothing', async () => {
    const names = await spread('multi');
    const blocker = other.get(LockService).getLock(names[2]);
    await blocker.lock();
    await expect(app.get(LockService).run(names, async () => 'ran', { waitTime: 100 })).rejects.toThrow(/not acquired/);
    expect(await Promise.all(names.map((n) => raw.exists(lockKey(n))))).toEqual([0, 0, 1]);
    await blocker.unlock();
    expect(await app.get(LockService).run(names, async () => Promise.all(names.map((n) => raw.exists(lockKey(n)))))).toEqual([1, 1, 1]);
  });

  it('fair lock: excludes, hands off by pub/sub, and keeps its line in the lock\'s slot, on every shard', async () => {
    const names = await spread('fair');
    await Promise.all(
      names.map(async (name) => {
        const holder = app.get(FairLockService).getLock(name);
        await holder.lock({ leaseTime: 10_000 });
        expect(await other.get(FairLockService).getLock(name).tryLock()).toBe(false);
        const waiter = other.get(FairLockService).getLock(name);
        const acquired = waiter.tryLock({ waitTime: 8_000 });
        await waitUntil(async () => (await raw.llen(`${lockKey(name)}:line`)) === 1);
        const releasedAt = Date.now();
        await holder.unlock();
        expect(await acquired).toBe(true);
        expect(Date.now() - releasedAt).toBeLessThan(1_000);
        await waiter.unlock();
      }),
    );
  });

  it('read-write lock: readers share, a writer excludes, and a writer\'s release wakes the readers, on every shard', async () => {
    const names = await spread('rw', rwKey);
    const owners = await Promise.all(names.map((n) => cluster.masterOf(rwKey(n))));
    expect(new Set(owners).size).toBe(3);
    await Promise.all(
      names.map(async (name) => {
        const service = (m: TestingModule) => m.get(ReadWriteLockService);
        const writer = service(app).getReadWriteLock(name).writeLock();
        await writer.lock({ leaseTime: 10_000 });
        const readers: Lock[] = [service(other).getReadWriteLock(name).readLock(), service(other).getReadWriteLock(name).readLock()];
        const reading = readers.map((r) => r.tryLock({ waitTime: 8_000 }));
        // Both readers wait on one sharded subscription, on the master that owns the lock's slot.
        const master = owners[names.indexOf(name)];
        await waitUntil(async () => (await shardSubscribers(master, waiterChannel(rwKey(name)))) === 1);
        const releasedAt = Date.now();
        await writer.unlock();
        expect(await Promise.all(reading)).toEqual([true, true]);
        expect(Date.now() - releasedAt).toBeLessThan(1_000);
        expect(await service(app).getReadWriteLock(name).writeLock().tryLock()).toBe(false);
        await Promise.all(readers.map((r) => r.unlock()));
        expect(await raw.exists(rwKey(name))).toBe(0);
      }),
    );
  });

  it('survives a subscriber connection killed on a master: the shard subscription comes back', async () => {
    const [name] = await spread('reconnect');
    const master = await cluster.masterOf(lockKey(name));
    const holder = app.get(LockService).getLock(name);
    await holder.lock({ leaseTime: 15_000 });
    const acquired = other.get(LockService).getLock(name).tryLock({ waitTime: 14_000 });
    await waitUntil(async () => (await shardSubscribers(master, waiterChannel(lockKey(name)))) === 1);
    const admin = master.client();
    expect(Number(await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub'))).toBeGreaterThanOrEqual(1);
    admin.disconnect();
    await waitUntil(async () => (await shardSubscribers(master, waiterChannel(lockKey(name)))) === 1, 10_000);
    const releasedAt = Date.now();
    await holder.unlock();
    expect(await acquired).toBe(true);
    expect(Date.now() - releasedAt).toBeLessThan(1_000); // by pub/sub: the lease had 10+ s left
  }, 30_000);
  it('cross-process exclusion with a counter, for keys on all three shards (reentrant, fair, write)', async () => {
    const names = await spread('counter');
    const nodes = JSON.stringify(cluster.startupNodes);
    const kinds = ['reentrant', 'reentrant', 'fair', 'write'];
    const rounds = 10;
    await Promise.all(kinds.map((kind) => completion(spawnFixture('counter-worker', [nodes, kind, names.join(','), String(rounds)]))));
    for (const name of names) {
      expect(Number(await raw.get(`counter:reentrant:${name}`))).toBe(2 * rounds);
      expect(Number(await raw.get(`counter:fair:${name}`))).toBe(rounds);
      expect(Number(await raw.get(`counter:write:${name}`))).toBe(rounds);
    }
  }, 60_000);

  it('follows a slot move: held locks stay renewable and releasable, and waiters are woken on the new master', async () => {
    // Two locks in one slot (explicit hash tag): one kept by the watchdog, one with a long fixed
    // lease whose waiter can only be woken in time by a message, not by the TTL.
    const [tag] = await spread('move');
    const kept = `{${tag}}:kept`;
    const leased = `{${tag}}:leased`;
    const keys = app.get(LockEngine).keys;
    const channel = waiterChannel(keys.lock(leased));
    const source = await cluster.masterOf(keys.lock(kept));
    const target = cluster.masters.find((m) => m !== source)!;
    const keptLock = app.get(LockService).getLock(kept);
    await keptLock.lock();
    const keptSignal = (keptLock as unknown as { hold: { signal: AbortSignal } }).hold.signal;
    const leasedLock = app.get(LockService).getLock(leased);
    await leasedLock.lock({ leaseTime: 30_000 });
    const waiter = other.get(LockService).getLock(leased);
    const acquired = waiter.tryLock({ waitTime: 25_000 });
    await waitUntil(async () => (await shardSubscribers(source, channel)) === 1);

    await cluster.moveSlot(keys.lock(kept), target);
    expect(await cluster.masterOf(keys.lock(leased))).toBe(target);
    // The subscriber re-subscribed on the slot's new master...
    await waitUntil(async () => (await shardSubscribers(target, channel)) === 1, 10_000);
    // ...the watchdog's renewals followed the slot...
    await sleep(WATCHDOG_MS * 2);
    expect(keptSignal.aborted).toBe(false);
    expect(await raw.exists(keys.lock(kept))).toBe(1);
    expect(await other.get(LockService).getLock(kept).tryLock()).toBe(false);
    // ...and releases run on the new master and wake the waiter there.
    const releasedAt = Date.now();
    await leasedLock.unlock();
    expect(await acquired).toBe(true);
    expect(Date.now() - releasedAt).toBeLessThan(1_000); // the lease had ~30 s left
    await waiter.unlock();
    await keptLock.unlock();
    expect(await raw.exists(keys.lock(kept))).toBe(0);
  }, 60_000);

  it('a frozen master: locks on its shard fail with LockUnavailableError within their bound, other shards keep working', async () => {
    const COMMAND_TIMEOUT = 500;
    const bounded = await createLockApp({ redis: cluster.cluster(), commandTimeout: COMMAND_TIMEOUT });
    const [frozenName, liveName] = await spread('frozen');
    const frozenMaster = await cluster.masterOf(lockKey(frozenName));
    frozenMaster.pause();
    try {
      const started = Date.now();
      const error = await bounded.get(LockService).run(frozenName, async () => 'ran', { waitTime: 300 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockUnavailableError);
      expect(Date.now() - started).toBeLessThan(300 + COMMAND_TIMEOUT + 2_000);
      expect(await bounded.get(LockService).run(liveName, async () => 'ran', { waitTime: 2_000 })).toBe('ran');
    } finally {
      frozenMaster.resume();
    }
    expect(await bounded.get(LockService).run(frozenName, async () => 'ran', { waitTime: 5_000 })).toBe('ran');
    await bounded.close();
  }, 30_000);
});
