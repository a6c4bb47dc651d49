import type { TestingModule } from '@nestjs/testing';
import calculateSlot from 'cluster-key-slot';
import { LockDeadlockError, LockService, ReadWriteLockService } from '../../lib';
import { createLockApp, waitUntil } from '../support/lock-app';
import { describeOnCluster, namesOnEveryMaster, startRedisCluster, TestRedisCluster } from '../support/redis-cluster';

/**
 * Deadlock detection across module instances on a Redis Cluster of 3 masters: each wait-for record
 * lives in its held lock's slot, each step runs on the waited lock's slot (docs/deadlocks.md).
 */
describeOnCluster('deadlocks on Redis Cluster (3 masters)', () => {
  const CHECK_AFTER_MS = 200;
  let cluster: TestRedisCluster;
  let app: TestingModule;
  let other: TestingModule;
  let third: TestingModule;
  const lockKey = (name: string) => `lock:{${name}}`;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    app = await createLockApp({ redis: cluster.cluster(), deadlockCheckAfter: CHECK_AFTER_MS });
    other = await createLockApp({ redis: cluster.cluster(), deadlockCheckAfter: CHECK_AFTER_MS });
    third = await createLockApp({ redis: cluster.cluster(), deadlockCheckAfter: CHECK_AFTER_MS });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await third?.close();
    await cluster?.stop();
  });

  it('a three-party cycle over locks on three masters is refused once, naming its locks; the others finish', async () => {
    const names = (await namesOnEveryMaster(cluster, 'dl', 1, lockKey)).map((group) => group[0]);
    const masters = await Promise.all(names.map((n) => cluster.masterOf(lockKey(n))));
    expect(new Set(masters).size).toBe(3);
    expect(new Set(names.map((n) => calculateSlot(`${lockKey(n)}:waitfor`) === calculateSlot(lockKey(n)))).size).toBe(1);
    const services = [app, other, third].map((m) => m.get(LockService));
    const holding = [false, false, false];
    const started = Date.now();
    const parties = names.map((name, i) =>
      services[i].run(
        name,
        async () => {
          holding[i] = true;
          await waitUntil(() => holding.every(Boolean));
          return services[i].run(names[(i + 1) % 3], async () => i, { waitTime: 30_000 });
        },
        { waitTime: 30_000 },
      ),
    );
    const outcomes = await Promise.allSettled(parties);
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(refused).toHaveLength(1);
    const error = refused[0].reason as LockDeadlockError;
    expect(error).toBeInstanceOf(LockDeadlockError);
    expect([...error.lockName].sort()).toEqual([...names].sort());
    expect(error.cycle).toHaveLength(3);
    // Generous: 1.5 x deadlockCheckAfter plus a few round trips, on a shared machine.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(2);
    // Every wait's records went with it.
    const raw = cluster.cluster();
    for (const name of names) expect(await raw.exists(`${lockKey(name)}:waitfor`)).toBe(0);
  });

  it('a read behind a writer of another instance, inside a read of the same lock, is refused across instances', async () => {
    const rw = app.get(ReadWriteLockService);
    const theirs = other.get(ReadWriteLockService);
    const inner = rw.getReadWriteLock('dl-doc');
    let reading = false;
    const outer = rw.runRead('dl-doc', async () => {
      reading = true;
      await waitUntil(async () => ((await rw.inspect('dl-doc')).waiters?.length ?? 0) > 0);
      await inner.readLock().tryLock({ waitTime: 30_000 });
    });
    await waitUntil(() => reading);
    const writer = theirs.getReadWriteLock('dl-doc').writeLock();
    const writing = writer.tryLock({ waitTime: 30_000 });
    await expect(outer).rejects.toBeInstanceOf(LockDeadlockError);
    await expect(outer).rejects.toThrow(/dl-doc/);
    expect(await writing).toBe(true);
    await writer.unlock();
  });
});
