import { hostname } from 'node:os';
import type { TestingModule } from '@nestjs/testing';
import type { Cluster } from 'ioredis';
import type Redis from 'ioredis';
import { FairLockService, Lock, LockInfo, LockService, ReadWriteLockService } from '../lib';
import { LockEngine } from '../lib/engine/lock-engine';
import { createLockApp, waitUntil } from './support/lock-app';
import { describeOnCluster, namesOnEveryMaster, startRedisCluster, TestRedisCluster } from './support/redis-cluster';
import type { RedisProcess } from './support/redis-process';

/**
 * `inspect` and `list` on a Redis Cluster of 3 masters: the inspect scripts cannot
 * read instance keys there (each lives in its own slot), so identities take the registry's lookup;
 * `list` SCANs every master. Names are chosen so their keys land on each master in turn.
 */
describeOnCluster('inspect and list on a Redis Cluster (3 masters)', () => {
  const WATCHDOG_MS = 2_000;
  let cluster: TestRedisCluster;
  let raw: Cluster;
  /** The module instance that asks. */
  let inspector: TestingModule;
  /** The module instances that hold and wait. */
  let holder: TestingModule;
  let third: TestingModule;
  let seq = 0;
  const lockKey = (name: string) => `lock:{${name}}`;
  const rwKey = (name: string) => `lock:rw:{${name}}`;
  const spread = async (label: string, perMaster = 1, keyOf = lockKey) =>
    namesOnEveryMaster(cluster, `icl-${label}-${++seq}`, perMaster, keyOf);
  const clientIdOf = (moduleRef: TestingModule) => moduleRef.get(LockEngine).ids.clientId;
  const collect = async (iterable: AsyncIterable<LockInfo>) => {
    const seen: LockInfo[] = [];
    for await (const info of iterable) seen.push(info);
    return seen;
  };

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    raw = cluster.cluster();
    const common = { redis: cluster.cluster(), watchdogTimeout: WATCHDOG_MS };
    inspector = await createLockApp({ ...common, redis: cluster.cluster(), clientName: 'cluster-inspector' });
    holder = await createLockApp({ ...common, redis: cluster.cluster(), clientName: 'cluster-holder' });
    third = await createLockApp({ ...common, redis: cluster.cluster(), clientName: 'cluster-third', fairLockWaiterTimeout: 60_000 });
  });
  afterAll(async () => {
    await inspector?.close();
    await holder?.close();
    await third?.close();
    await cluster?.stop();
  });

  it('liveInstances: the index (one key) lists every instance, identities looked up in their own slots; heldSince and serverTime too', async () => {
    const ids = [inspector, holder, third].map(clientIdOf);
    await waitUntil(async () => (await inspector.get(LockService).liveInstances()).instances.length === 3);
    const live = await inspector.get(LockService).liveInstances();
    expect(live.instances.map((i) => i.clientId).sort()).toEqual([...ids].sort());
    expect(live.instances.find((i) => i.clientId === clientIdOf(holder))).toMatchObject({ clientName: 'cluster-holder', host: hostname(), pid: process.pid });
    expect(live.instances.every((i) => i.aliveUntil > live.serverTime)).toBe(true);

    const [name] = (await spread('since')).map((group) => group[0]);
    const lock = holder.get(LockService).getLock(name);
    await lock.lock();
    const info = await inspector.get(LockService).inspect(name);
    expect(info.holders[0].heldSince).toBe(Math.floor(lock.getFencingToken()! / 1000));
    expect(info.serverTime).toBeGreaterThanOrEqual(info.holders[0].heldSince!);
    await lock.unlock();
  });

  it('inspect: holder identity (from another module instance), hold count, token and TTL for names on each shard', async () => {
    const names = (await spread('hold')).map((group) => group[0]);
    const owners = await Promise.all(names.map((name) => cluster.masterOf(lockKey(name))));
    expect(new Set(owners).size).toBe(3);
    const held: Lock[] = [];
    for (const name of names) {
      const lock = holder.get(LockService).getLock(name);
      await lock.lock();
      await lock.lock();
      held.push(lock);
    }
    for (const [i, name] of names.entries()) {
      const info = await inspector.get(LockService).inspect(name);
      expect(info).toMatchObject({ name, kind: 'reentrant', locked: true, fencingToken: held[i].getFencingToken() });
      expect(typeof info.fencingToken).toBe('number');
      expect(info.ttl).toBeGreaterThan(0);
      expect(info.ttl).toBeLessThanOrEqual(WATCHDOG_MS);
      expect(info.holders).toHaveLength(1);
      expect(info.holders[0].ownerId.startsWith(`${clientIdOf(holder)}:`)).toBe(true);
      expect(info.holders[0].holdCount).toBe(2);
      expect(info.holders[0].instance).toMatchObject({
        clientId: clientIdOf(holder),
        clientName: 'cluster-holder',
        host: hostname(),
        pid: process.pid,
      });
      expect(Number.isNaN(Date.parse(info.holders[0].instance!.startedAt))).toBe(false);
      expect(info.waiters).toBeUndefined();
    }
    for (const lock of held) {
      await lock.unlock();
      await lock.unlock();
    }
    for (const name of names) {
      expect(await inspector.get(LockService).inspect(name)).toEqual({ name, kind: 'reentrant', locked: false, ttl: -2, holders: [], serverTime: expect.any(Number) });
    }
  });

  it('inspect: a read-write lock on each shard, readers of two instances and a writer', async () => {
    const names = (await spread('rw', 1, rwKey)).map((group) => group[0]);
    const rw = inspector.get(ReadWriteLockService);
    for (const name of names) {
      const mine = rw.getReadWriteLock(name).readLock();
      const theirs = holder.get(ReadWriteLockService).getReadWriteLock(name).readLock();
      await mine.lock();
      await theirs.lock();
      const info = await rw.inspect(name);
      expect(info).toMatchObject({ name, kind: 'read-write', locked: true, mode: 'read' });
      expect(info.holders.map((h) => [h.mode, h.holdCount, h.instance?.clientName]).sort()).toEqual([
        ['read', 1, 'cluster-holder'],
        ['read', 1, 'cluster-inspector'],
      ]);
      await mine.unlock();
      await theirs.unlock();

      const write = holder.get(ReadWriteLockService).getReadWriteLock(name).writeLock();
      await write.lock();
      const written = await rw.inspect(name);
      expect(written).toMatchObject({ mode: 'write', fencingToken: write.getFencingToken() });
      expect(written.holders).toEqual([expect.objectContaining({ mode: 'write', holdCount: 1, instance: expect.objectContaining({ clientName: 'cluster-holder' }) })]);
      await write.unlock();
    }
  });

  it('list: walks every master and finds the locks on all 3 shards, filtered by name', async () => {
    const groups = await spread('list', 3);
    const rwNames = (await spread('list-rw', 1, rwKey)).map((group) => group[0]);
    const base = `icl-list-`;
    const reentrant = groups.flat().map((name) => holder.get(LockService).getLock(name));
    const writes = rwNames.map((name) => holder.get(ReadWriteLockService).getReadWriteLock(name).writeLock());
    for (const lock of [...reentrant, ...writes]) await lock.lock();
    // A lock of another name family, not matched.
    const unrelated = holder.get(LockService).getLock(`icl-unrelated-${seq}`);
    await unrelated.lock();

    const seen = await collect(inspector.get(LockService).list({ match: `${base}*` }));
    const expected = [
      ...groups.flat().map((name) => `reentrant ${name}`),
      ...rwNames.map((name) => `read-write ${name}`),
    ].sort();
    expect(seen.map((info) => `${info.kind} ${info.name}`).sort()).toEqual(expected);
    for (const info of seen) {
      expect(info.locked).toBe(true);
      expect(info.holders[0].instance?.clientName).toBe('cluster-holder');
      expect(info.fencingToken).toEqual(expect.any(Number));
    }
    // The records come from all three masters.
    const masters = await Promise.all(
      seen.map((info) => cluster.masterOf(info.kind === 'read-write' ? rwKey(info.name) : lockKey(info.name))),
    );
    expect(new Set(masters.map((m) => m.port)).size).toBe(3);
    // Without a pattern the unrelated lock is there too.
    const all = (await collect(inspector.get(LockService).list())).map((info) => info.name);
    expect(all).toEqual(expect.arrayContaining([...groups.flat(), ...rwNames, `icl-unrelated-${seq}`]));

    for (const lock of [...reentrant, ...writes, unrelated]) await lock.unlock();
    expect(await collect(inspector.get(LockService).list({ match: `${base}*` }))).toEqual([]);
  });

  it('list: bounded, every SCAN on every master carries COUNT, and the walk goes no further than the caller reads', async () => {
    const groups = await spread('bounded', 4);
    const locks = groups.flat().map((name) => holder.get(LockService).getLock(name));
    for (const lock of locks) await lock.lock();
    const scans = new Map<number, string[][]>();
    const monitors: Array<{ master: RedisProcess; monitor: Redis; marker: string }> = [];
    for (const master of cluster.masters) {
      const client = master.client();
      const monitor = await client.monitor();
      scans.set(master.port, []);
      monitor.on('monitor', (_time: string, args: string[]) => {
        if (String(args[0]).toLowerCase() === 'scan') scans.get(master.port)!.push(args.map(String));
        if (String(args[0]).toLowerCase() === 'echo') monitors.find((m) => m.master === master)!.marker = String(args[1]);
      });
      monitors.push({ master, monitor, marker: '' });
      client.disconnect();
    }
    /** Waits until every monitor has seen a marker sent after the walk: all its SCANs were seen. */
    const drain = async (label: string) => {
      for (const entry of monitors) {
        const client = entry.master.client();
        await client.echo(label);
        client.disconnect();
      }
      await waitUntil(() => monitors.every((entry) => entry.marker === label), 5_000);
    };
    try {
      const seen = await collect(inspector.get(LockService).list({ match: `icl-bounded-*`, count: 3 }));
      expect(seen.map((info) => info.name).sort()).toEqual(groups.flat().sort());
      await drain('walked');
      for (const master of cluster.masters) {
        const calls = scans.get(master.port)!;
        // Each master walked to the end of its keyspace, several round trips of at most COUNT 3 keys.
        expect(calls.length).toBeGreaterThan(1);
        for (const call of calls) {
          const at = call.findIndex((arg) => arg.toUpperCase() === 'COUNT');
          expect(call[at + 1]).toBe('3');
        }
      }

      // A caller that stops after the first record: the SCANs stop with it (the walk is pulled).
      const fullWalk = new Map([...scans].map(([port, calls]) => [port, calls.length]));
      for (const calls of scans.values()) calls.length = 0;
      const first = inspector.get(LockService).list({ match: `icl-bounded-*`, count: 3 })[Symbol.asyncIterator]();
      const head = await first.next();
      expect(head.done).toBe(false);
      await first.return?.();
      await drain('stopped');
      const scanned = [...scans].filter(([, calls]) => calls.length > 0);
      expect(scanned).toHaveLength(1);
      const [[port, calls]] = scanned;
      expect(calls.length).toBeLessThanOrEqual(fullWalk.get(port)!);
    } finally {
      for (const { monitor } of monitors) monitor.disconnect();
      for (const lock of locks) await lock.unlock();
    }
  });

  it("inspect and list show a fair lock's line on each shard, in order, each waiter with its instance", async () => {
    const names = (await spread('fair')).map((group) => group[0]);
    const aborts: AbortController[] = [];
    const pending: Array<Promise<unknown>> = [];
    const heads: Lock[] = [];
    try {
      for (const name of names) {
        const head = inspector.get(FairLockService).getLock(name);
        await head.lock();
        heads.push(head);
        for (const moduleRef of [holder, third]) {
          const abort = new AbortController();
          aborts.push(abort);
          const waiting = moduleRef.get(FairLockService).getLock(name).tryLock({ waitTime: 60_000, signal: abort.signal });
          pending.push(waiting.catch(() => undefined));
          const expected = moduleRef === holder ? 1 : 2;
          await waitUntil(async () => (await raw.llen(`${lockKey(name)}:line`)) === expected);
        }
      }
      for (const [i, name] of names.entries()) {
        const info = await inspector.get(FairLockService).inspect(name);
        expect(info).toMatchObject({ name, kind: 'fair', locked: true, fencingToken: heads[i].getFencingToken() });
        expect(info.holders.map((h) => [h.holdCount, h.instance?.clientName])).toEqual([[1, 'cluster-inspector']]);
        expect(info.waiters!.map((w) => w.instance?.clientName)).toEqual(['cluster-holder', 'cluster-third']);
        expect(info.waiters![0].ownerId.startsWith(`${clientIdOf(holder)}:`)).toBe(true);
        expect(info.waiters![1].ownerId.startsWith(`${clientIdOf(third)}:`)).toBe(true);
        expect(info.waiters![1].instance).toMatchObject({ clientId: clientIdOf(third), host: hostname(), pid: process.pid });
        // The same line through LockService.inspect and list().
        expect((await inspector.get(LockService).inspect(name)).waiters).toEqual(info.waiters);
        const listed = await collect(inspector.get(LockService).list({ match: name }));
        expect(listed).toHaveLength(1);
        expect(listed[0]).toMatchObject({ name, kind: 'fair', waiters: info.waiters });
      }
    } finally {
      for (const abort of aborts) abort.abort();
      await Promise.all(pending);
      for (const head of heads) await head.unlock();
    }
    for (const name of names) {
      expect(await raw.llen(`${lockKey(name)}:line`)).toBe(0);
      expect(await inspector.get(FairLockService).inspect(name)).toMatchObject({ locked: false, waiters: [] });
    }
  });
});
