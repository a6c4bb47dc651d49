import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { ReadWriteLockService } from '../../lib';
import type { LockModuleOptions } from '../../lib';
import { createLockApp, deferred, releasesSettled, sleep, waitUntil } from '../support/lock-app';
import { kitEngine } from '../support/lock-contract';
import { describeOnCluster, startRedisCluster } from '../support/redis-cluster';
import { startRedis } from '../support/redis-server';

/** Where a suite runs: module instances on one server, and a raw client of that server. */
interface Server {
  createApp(options: Omit<LockModuleOptions, 'redis'>): Promise<TestingModule>;
  client(): Redis;
  stop(): Promise<void>;
}

/**
 * The read-write lock's line in Redis, across two module instances (two processes, as far as Redis
 * can tell): a writer is not starved by overlapping readers, two writers share the lock, and the
 * readers queued behind a writer are admitted together.
 */
function describeReadWriteHandOff(title: string, start: () => Promise<Server>): void {
describe(`read-write lock hand-off (starvation, ${title})`, () => {
  const WATCHDOG_MS = 600;
  let redis: Server;
  let raw: Redis;
  let app: TestingModule;
  let other: TestingModule;
  let seq = 0;
  const fresh = () => `rw-handoff-${++seq}`;
  const key = (name: string) => `lock:rw:{${name}}`;
  const service = (module: TestingModule) => module.get(ReadWriteLockService);

  beforeAll(async () => {
    redis = await start();
    raw = redis.client();
    app = await redis.createApp({ watchdogTimeout: WATCHDOG_MS });
    other = await redis.createApp({ watchdogTimeout: WATCHDOG_MS });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await redis?.stop();
  });

  it('a writer behind two overlapping reader loops gets in within a few reader rounds, and the readers go on after', async () => {
    const name = fresh();
    let stop = false;
    let rounds = 0;
    let reading = 0;
    let maxReading = 0;
    let writing = false;
    let overlapWithWriter = false;
    const readerLoop = async (module: TestingModule): Promise<void> => {
      while (!stop) {
        await service(module).runRead(
          name,
          async () => {
            reading += 1;
            maxReading = Math.max(maxReading, reading);
            if (writing) overlapWithWriter = true;
            await sleep(20);
            reading -= 1;
          },
          { waitTime: 10_000 },
        );
        rounds += 1;
      }
    };
    const loops = [readerLoop(app), sleep(10).then(() => readerLoop(other))];
    try {
      // The readers overlap (the lock is never free between them) before the writer asks.
      await waitUntil(() => rounds >= 10 && maxReading >= 2);
      const roundsBefore = rounds;
      const asked = Date.now();
      let roundsWhileWaiting = -1;
      await service(app).runWrite(
        name,
        async () => {
          roundsWhileWaiting = rounds - roundsBefore;
          writing = true;
          if (reading > 0) overlapWithWriter = true;
          await sleep(20);
          writing = false;
        },
        { waitTime: 10_000 },
      );
      const waitedMs = Date.now() - asked;
      // The readers holding when it asked finish (one round each, and perhaps one that was on its way).
      expect(roundsWhileWaiting).toBeGreaterThanOrEqual(0);
      expect(roundsWhileWaiting).toBeLessThanOrEqual(4);
      expect(waitedMs).toBeLessThan(2_000);
      // And after it, the readers go on.
      const roundsAfter = rounds;
      await waitUntil(() => rounds >= roundsAfter + 10, 5_000);
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    expect(overlapWithWriter).toBe(false);
    await releasesSettled(app);
    await releasesSettled(other);
    await waitUntil(async () => (await raw.exists(key(name), `${key(name)}:line`)) === 0);
  });

  it('two writer loops in two instances share one name: each gets at least half the turns of the other', async () => {
    const name = fresh();
    const counts = [0, 0];
    let inside = 0;
    let overlapped = false;
    const until = Date.now() + 2_000;
    const writerLoop = async (module: TestingModule, index: number): Promise<void> => {
      while (Date.now() < until) {
        await service(module).runWrite(
          name,
          async () => {
            inside += 1;
            if (inside > 1) overlapped = true;
            await sleep(5);
            inside -= 1;
            counts[index] += 1;
          },
          { waitTime: 10_000 },
        );
      }
    };
    await Promise.all([writerLoop(app, 0), writerLoop(other, 1)]);
    expect(overlapped).toBe(false);
    expect(Math.min(...counts)).toBeGreaterThan(0);
    expect(Math.min(...counts) / Math.max(...counts)).toBeGreaterThanOrEqual(0.5);
    await releasesSettled(app);
    await releasesSettled(other);
  });

  it('readers queued behind a writer all get in together once it releases', async () => {
    const name = fresh();
    const writer = service(app).getReadWriteLock(name).writeLock();
    await writer.lock();
    let reading = 0;
    let maxReading = 0;
    const enteredAt: number[] = [];
    const allIn = deferred();
    const readers = [app, other, other].map((module) =>
      service(module).runRead(
        name,
        async () => {
          enteredAt.push(Date.now());
          reading += 1;
          maxReading = Math.max(maxReading, reading);
          if (reading === 3) allIn.resolve();
          // Each stays until all three are in (or a bound passes): they overlap only if admitted together.
          await Promise.race([allIn.promise, sleep(3_000)]);
          await sleep(20);
          reading -= 1;
        },
        { waitTime: 10_000 },
      ),
    );
    await waitUntil(async () => (await raw.llen(`${key(name)}:line`)) === 3);
    const releasedAt = Date.now();
    await writer.unlock();
    await Promise.all(readers);
    expect(maxReading).toBe(3);
    // Admitted by the writer's release in one script: none waited for another's turn.
    expect(Math.max(...enteredAt) - releasedAt).toBeLessThan(1_000);
    await releasesSettled(app);
    await releasesSettled(other);
    expect(await raw.exists(key(name), `${key(name)}:line`)).toBe(0);
  });
});
}

describeReadWriteHandOff('redis', async () => {
  const redis = await startRedis();
  return { createApp: (options) => createLockApp({ ...options, redis: redis.url }), client: () => redis.client(), stop: () => redis.stop() };
});

describeReadWriteHandOff('testing kit', async () => {
  const kit = await kitEngine.start();
  return { createApp: (options) => kit.createApp({ ...options, redis: kit.url }), client: () => kit.client(), stop: () => kit.stop() };
});

describeOnCluster('read-write lock hand-off on a cluster', () => {
  describeReadWriteHandOff('3-master cluster', async () => {
    const cluster = await startRedisCluster(3);
    return {
      createApp: (options) => createLockApp({ ...options, redis: cluster.cluster() }),
      client: () => cluster.cluster() as unknown as Redis,
      stop: () => cluster.stop(),
    };
  });
});
