import type { TestingModule } from '@nestjs/testing';
import { LockError, LockLostError, LockService, LockUnavailableError } from '../lib';
import { createLockApp, deferred, waitUntil } from './support/lock-app';
import type { RedisProcess } from './support/redis-process';
import { startRedisSentinel, TestRedisSentinel } from './support/redis-sentinel';

/**
 * A primary, a replica and 3 sentinels; the library connects through the sentinels (ioredis
 * `sentinels` + `name` options) and must follow the failover when the primary dies.
 */
describe('Sentinel failover', () => {
  // Long enough for a lease to outlive the failover (~1-3 s here), short enough to notice losses.
  const WATCHDOG_MS = 8_000;
  let topology: TestRedisSentinel;
  let app: TestingModule;
  let other: TestingModule;
  let synced: TestingModule;

  beforeAll(async () => {
    topology = await startRedisSentinel();
    app = await createLockApp({ redis: topology.options(), watchdogTimeout: WATCHDOG_MS });
    other = await createLockApp({ redis: topology.options(), watchdogTimeout: WATCHDOG_MS });
    synced = await createLockApp({ redis: topology.options(), watchdogTimeout: WATCHDOG_MS, syncReplicas: 1, syncReplicasTimeout: 300 });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await synced?.close();
    await topology?.stop();
  });

  /** Holds `name` through `run` until `release` is called; exposes the run's signal. */
  function holdInRun(module: TestingModule, name: string) {
    const gate = deferred();
    let signal: AbortSignal | undefined;
    const running = module.get(LockService).run(name, async (context) => {
      signal = context.signal;
      await gate.promise;
      return 'done';
    });
    return {
      running,
      held: () => waitUntil(() => signal !== undefined),
      get signal() {
        return signal!;
      },
      release: () => gate.resolve(),
    };
  }

  it('follows a failover: replicated locks survive, an unreplicated one is signalled lost, waiters and new locks proceed', async () => {
    const oldPrimary = await topology.primary();
    const replica = topology.servers.find((s) => s !== oldPrimary) as RedisProcess;
    const replicaClient = replica.client();

    // syncReplicas: the acquisition returns only once the replica has it (once the replica is
    // through its first sync: on a loaded machine that can take longer than syncReplicasTimeout).
    await topology.waitForReplica();
    const syncedLock = synced.get(LockService).getLock('sync-before');
    expect(await syncedLock.tryLock()).toBe(true);
    expect(await replicaClient.exists('lock:{sync-before}')).toBe(1);
    await syncedLock.unlock();

    const kept = holdInRun(app, 'kept');
    const lost = holdInRun(app, 'lost');
    await kept.held();
    await lost.held();
    const waiter = other.get(LockService).getLock('kept');
    const waiting = waiter.tryLock({ waitTime: 30_000 });
    await topology.waitForReplica();
    // The replica misses the write of 'lost', as an asynchronous replica does when the primary dies
    // before sending it (the replica is writable in this topology for exactly this).
    expect(await replicaClient.del('lock:{lost}')).toBe(1);

    await oldPrimary.stop();
    const newPrimary = await topology.waitForFailover(oldPrimary);
    expect(newPrimary).toBe(replica);

    // New locks are taken on the promoted primary.
    const fresh = app.get(LockService).getLock('after-failover');
    expect(await fresh.tryLock({ waitTime: 15_000 })).toBe(true);
    expect(await replicaClient.exists('lock:{after-failover}')).toBe(1);
    await fresh.unlock();

    // The lock the failover lost is reported through the holder's signal...
    await waitUntil(() => lost.signal.aborted, WATCHDOG_MS * 2);
    expect(lost.signal.reason).toBeInstanceOf(LockLostError);
    lost.release();
    await expect(lost.running).resolves.toBe('done');

    // ...the replicated one is still held and renewed on the new primary...
    expect(kept.signal.aborted).toBe(false);
    expect(await other.get(LockService).getLock('kept').tryLock()).toBe(false);

    // ...and its waiter, which waited through the failover, gets it when it is released.
    kept.release();
    await expect(kept.running).resolves.toBe('done');
    expect(await waiting).toBe(true);
    await waiter.unlock();
    expect(kept.signal.aborted).toBe(false);
  }, 90_000);

  it('syncReplicas: with no replica left to confirm, the acquisition fails with a LockError and lets go', async () => {
    // The failover above left the promoted primary without a replica.
    const lock = synced.get(LockService).getLock('sync-after');
    const error = await lock.tryLock().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockError);
    expect((error as Error).message).toBe(
      'Lock "sync-after" was acquired but only 0 of 1 replicas confirmed it within 300 ms (syncReplicas); it was released again',
    );
    expect(await lock.isLocked()).toBe(false);
    // Without syncReplicas the same primary grants it.
    const plain = app.get(LockService).getLock('sync-after');
    expect(await plain.tryLock()).toBe(true);
    await plain.unlock();
  }, 30_000);
  it('a frozen primary (no replica left to promote): run fails with LockUnavailableError within its bound, and works once it resumes', async () => {
    const COMMAND_TIMEOUT = 500;
    const bounded = await createLockApp({ redis: topology.options(), commandTimeout: COMMAND_TIMEOUT, syncReplicas: 1, syncReplicasTimeout: 300 });
    const primary = await topology.primary();
    primary.pause();
    try {
      const started = Date.now();
      const error = await bounded.get(LockService).run('frozen-primary', async () => 'ran', { waitTime: 300 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockUnavailableError);
      expect(Date.now() - started).toBeLessThan(300 + COMMAND_TIMEOUT + 2_000);
    } finally {
      primary.resume();
    }
    const plain = app.get(LockService).getLock('frozen-primary');
    expect(await plain.tryLock({ waitTime: 10_000 })).toBe(true);
    await plain.unlock();
    await bounded.close();
  }, 30_000);
});

describe('syncReplicas options', () => {
  it.each([
    [{ syncReplicas: -1 }, /"syncReplicas" must be a whole number >= 0 \(got -1\)/],
    [{ syncReplicas: 1.5 }, /"syncReplicas" must be a whole number >= 0 \(got 1.5\)/],
    [{ syncReplicas: '1' }, /"syncReplicas" must be a whole number >= 0 \(got "1"\)/],
    [{ syncReplicas: 1, syncReplicasTimeout: 0 }, /"syncReplicasTimeout" must be a whole number of milliseconds >= 1 \(got 0\)/],
  ])('rejects %j at bootstrap, naming the option', async (options, message) => {
    await expect(createLockApp({ redis: 'redis://127.0.0.1:1', ...(options as object) })).rejects.toThrow(message);
  });
});
