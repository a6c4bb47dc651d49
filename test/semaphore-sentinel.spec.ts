import type { TestingModule } from '@nestjs/testing';
import { LockLostError, SemaphoreService } from '../lib';
import { createLockApp, waitUntil } from './support/lock-app';
import type { RedisProcess } from './support/redis-process';
import { startRedisSentinel, TestRedisSentinel } from './support/redis-sentinel';

/** Semaphores through Sentinel (a primary, a replica, 3 sentinels): acquire/release, then a failover. */
describe('semaphores through Sentinel', () => {
  // Long enough for a lease to outlive the failover (~1-3 s here), short enough to notice losses.
  const WATCHDOG_MS = 8_000;
  const semKey = (name: string) => `lock:sem:{${name}}`;
  let topology: TestRedisSentinel;
  let app: TestingModule;
  let other: TestingModule;

  beforeAll(async () => {
    topology = await startRedisSentinel();
    app = await createLockApp({ redis: topology.options(), watchdogTimeout: WATCHDOG_MS });
    other = await createLockApp({ redis: topology.options(), watchdogTimeout: WATCHDOG_MS });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await topology?.stop();
  });

  it('acquires and releases through the sentinels; after a failover replicated permits are kept, a permit the replica missed is signalled lost, waiters and new acquisitions proceed', async () => {
    const oldPrimary = await topology.primary();
    const replica = topology.servers.find((s) => s !== oldPrimary) as RedisProcess;
    const replicaClient = replica.client();
    const semaphores = app.get(SemaphoreService);

    // Through the sentinels, on the primary.
    const before = semaphores.getSemaphore('sem-before', { permits: 2 });
    const first = await before.acquire({ take: 2 });
    expect(await before.availablePermits()).toBe(0);
    expect(await before.tryAcquire()).toBeNull();
    await first.release();
    expect(await before.availablePermits()).toBe(2);

    const kept = semaphores.getSemaphore('sem-kept', { permits: 2 });
    const keptPermits = [await kept.acquire(), await kept.acquire()];
    const lost = await semaphores.getSemaphore('sem-lost', { permits: 1 }).acquire();
    const waiting = other.get(SemaphoreService).getSemaphore('sem-kept', { permits: 2 }).acquire({ waitTime: 30_000 });
    await waitUntil(async () => (await semaphores.inspect('sem-kept')).waiters.length === 1);
    await topology.waitForReplica();
    // The replica misses the permit of 'sem-lost', as an asynchronous replica does when the primary
    // dies before sending it (the replica is writable in this topology for exactly this).
    expect(await replicaClient.del(semKey('sem-lost'), `${semKey('sem-lost')}:leases`)).toBe(2);

    await oldPrimary.stop();
    expect(await topology.waitForFailover(oldPrimary)).toBe(replica);

    // New acquisitions are made on the promoted primary.
    const fresh = await semaphores.getSemaphore('sem-after', { permits: 1 }).tryAcquire({ waitTime: 15_000 });
    expect(fresh).not.toBeNull();
    expect(await replicaClient.exists(semKey('sem-after'))).toBe(1);
    await fresh!.release();

    // The permit the failover lost is reported through its holder's signal...
    await waitUntil(() => lost.signal.aborted, WATCHDOG_MS * 2);
    expect(lost.signal.reason).toBeInstanceOf(LockLostError);

    // ...the replicated ones are still held (and renewed on the new primary)...
    expect(keptPermits.some((p) => p.signal.aborted)).toBe(false);
    expect(await kept.availablePermits()).toBe(0);
    expect(await other.get(SemaphoreService).getSemaphore('sem-kept', { permits: 2 }).tryAcquire()).toBeNull();

    // ...and the waiter, which waited through the failover, gets a permit when one is released.
    await keptPermits[0].release();
    const next = await waiting;
    expect(next.fencingToken).toBeGreaterThan(Math.max(...keptPermits.map((p) => p.fencingToken!)));
    await next.release();
    await keptPermits[1].release();
    expect(keptPermits[1].signal.aborted).toBe(false);
    expect(await kept.availablePermits()).toBe(2);
  }, 90_000);
});
