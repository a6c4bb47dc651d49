import type { TestingModule } from '@nestjs/testing';
import Redis, { Cluster } from 'ioredis';
import { ReadWriteLockService } from '../../lib';
import { createLockApp, deferred, sleep } from '../support/lock-app';
import { clusterUnsupportedReason, redisServerBin } from '../support/redis-binaries';
import { startRedisCluster, type TestRedisCluster } from '../support/redis-cluster';
import { startRedisBinary, type TestRedis } from '../support/redis-server';
import { buildRedissonDriver, RedissonProcess, redissonVersionsUnderTest } from './redisson';
import { ScenarioViolation } from './scenario';

/**
 * Scenario 7 of DESIGN-redisson-layout.md §8: our `ReadWriteLockService` in layout 'redisson' and a
 * real Java Redisson's `RReadWriteLock` on the same name. Readers of both languages share it; a
 * writer of either excludes both (a lost-update counter); a Java read unlock leaves the Node
 * reader's hold in place; the Node reader outlives 3 × the watchdog beside a Java reader that leaves.
 * Each scenario passes on layout 'redisson' and must reject with an explicit violation on layout
 * 'native' (proof that it sees a wrong layout). Standalone and a 3-master Cluster (Redisson AUTO:
 * sharded pub/sub), both Redisson majors.
 *
 * Opt-in: INTEROP=1; REDISSON_VERSION narrows the versions.
 */

const enabled = process.env.INTEROP === '1';
const versions = redissonVersionsUnderTest();
const WATCHDOG_MS = 1_500;
const clusterSkip = clusterUnsupportedReason();

if (!enabled) process.stderr.write('interop/read-write-lock.spec: skipped (set INTEROP=1 to drive a real Java Redisson)\n');
const describeInterop = enabled ? describe : describe.skip;

jest.setTimeout(60_000);

type Layout = 'redisson' | 'native';


function check(condition: boolean, code: string, detail: () => string): asserts condition {
  if (!condition) throw new ScenarioViolation(code, detail());
}

/** The Redis a topology's scenarios run on, as each side reaches it. */
interface Topology {
  readonly raw: Redis | Cluster;
  nodeConnection(): string | Cluster;
  startJava(version: string): Promise<RedissonProcess>;
  stop(): Promise<void>;
}

async function standalone(): Promise<Topology> {
  const redis: TestRedis = await startRedisBinary(redisServerBin());
  return {
    raw: redis.client(),
    nodeConnection: () => redis.url,
    startJava: (version) => RedissonProcess.start({ version, address: redis.url, watchdogMs: WATCHDOG_MS }),
    stop: () => redis.stop(),
  };
}

async function cluster(): Promise<Topology> {
  const servers: TestRedisCluster = await startRedisCluster(3);
  return {
    raw: servers.cluster(),
    nodeConnection: () => servers.cluster(),
    startJava: (version) => RedissonProcess.start({ version, cluster: servers.masters.map((m) => m.url), watchdogMs: WATCHDOG_MS }),
    stop: () => servers.stop(),
  };
}

const topologies: Array<[string, () => Promise<Topology>]> = [['standalone', standalone]];
if (!clusterSkip) topologies.push(['cluster', cluster]);
else process.stderr.write(`interop/read-write-lock.spec: cluster skipped (${clusterSkip})\n`);

describeInterop.each(versions)('RReadWriteLock interop with Redisson %s', (version) => {
  beforeAll(() => buildRedissonDriver(version), 600_000);

  describe.each(topologies)('on %s', (_topology, start) => {
    let topology: Topology;
    let java: RedissonProcess;
    let n = 0;
    const fresh = (what: string): string => `interop-rw:${version}:${what}:${++n}`;

    beforeAll(async () => {
      topology = await start();
      java = await topology.startJava(version);
    }, 60_000);
    afterAll(async () => {
      await java?.close();
      await topology?.stop();
    });

    /** A Node module instance of `layout` for one scenario run. */
    async function nodeApp(layout: Layout): Promise<{ app: TestingModule; rw: ReadWriteLockService }> {
      const app = await createLockApp({ redis: topology.nodeConnection(), layout, watchdogTimeout: WATCHDOG_MS });
      return { app, rw: app.get(ReadWriteLockService) };
    }

    /**
     * Readers of both languages hold together; while only one language reads, the other's writer is
     * refused (both directions); then writers of both languages take turns on a read-modify-write
     * counter, which ends exact.
     */
    async function exclusion(layout: Layout): Promise<void> {
      const name = fresh(`exclusion-${layout}`);
      const counter = `${name}:counter`;
      const { app, rw } = await nodeApp(layout);
      const reader = java.holder('reader');
      const writers = [java.holder('w1'), java.holder('w2')];
      const release = deferred();
      const inside = deferred();
      const reading = rw.runRead(name, async () => {
        inside.resolve();
        await release.promise;
      });
      try {
        // Node reads alone: Java's writer is refused, Java's reader joins.
        await inside.promise;
        const javaWrote = await writers[0].writeTryLock(name, 0);
        if (javaWrote) await writers[0].writeUnlock(name);
        check(!javaWrote, 'not-excluded', () => 'a Java writer got in beside a Node reader');
        check(await reader.readTryLock(name, 0), 'reader-refused', () => 'a Java reader was refused beside a Node reader');
        release.resolve();
        await reading;
        // Java reads alone: Node's writer is refused.
        const nodeWriter = rw.getReadWriteLock(name).writeLock();
        const nodeWrote = await nodeWriter.tryLock();
        if (nodeWrote) await nodeWriter.unlock();
        await reader.readUnlock(name);
        check(!nodeWrote, 'not-excluded', () => 'a Node writer got in beside a Java reader');

        const rounds = 4;
        const javaTurns = writers.map(async (holder) => {
          for (let i = 0; i < rounds; i++) {
            await holder.writeLock(name, { timeoutMs: 30_000 });
            await holder.incr(counter, 2);
            await holder.writeUnlock(name);
          }
        });
        const nodeTurns = [0, 1].map(async () => {
          for (let i = 0; i < rounds; i++) {
            await rw.runWrite(
              name,
              async () => {
                const value = Number((await topology.raw.get(counter)) ?? 0);
                await sleep(2);
                await topology.raw.set(counter, String(value + 1));
              },
              { waitTime: 30_000 },
            );
          }
        });
        await Promise.all([...javaTurns, ...nodeTurns]);
        const total = Number(await topology.raw.get(counter));
        check(total === 4 * rounds, 'lost-update', () => `counter ${total}, expected ${4 * rounds}`);
      } finally {
        release.resolve();
        await reading.catch(() => undefined);
        await app.close();
      }
    }

    /**
     * A Node reader holds; a Java reader comes and leaves (its unlock recomputes the hash's TTL from
     * every reader's timeout keys): the Node reader's field stays, through 3 × the watchdog, and a
     * Java writer stays refused all along.
     */
    async function readerSurvives(layout: Layout): Promise<void> {
      const name = fresh(`survives-${layout}`);
      const { app, rw } = await nodeApp(layout);
      const reader = java.holder('reader');
      const writer = java.holder('writer');
      let javaReads = false;
      const release = deferred();
      const inside = deferred<AbortSignal>();
      const reading = rw.runRead(name, async ({ signal }) => {
        inside.resolve(signal);
        await release.promise;
      });
      try {
        const signal = await inside.promise;
        await reader.readLock(name);
        javaReads = true;
        const javaOwner = await reader.owner();
        const nodeFields = async (): Promise<string[]> =>
          Object.keys(await topology.raw.hgetall(name)).filter((field) => field !== 'mode' && field !== javaOwner);
        const fields = await nodeFields();
        check(fields.length === 1, 'reader-dropped', () => `the hash holds no Node reader (${JSON.stringify(fields)})`);
        await reader.readUnlock(name);
        javaReads = false;
        check((await nodeFields()).length === 1, 'reader-dropped', () => 'a Java read unlock took the Node reader with it');
        // A Java reader that stays a while and leaves, then 3 × the watchdog in all.
        await reader.readLock(name);
        javaReads = true;
        const started = Date.now();
        let javaLeft = false;
        while (Date.now() - started < 3 * WATCHDOG_MS) {
          if (!javaLeft && Date.now() - started > WATCHDOG_MS) {
            await reader.readUnlock(name);
            javaReads = false;
            javaLeft = true;
          }
          check((await nodeFields()).length === 1, 'reader-dropped', () => `the Node reader's field was gone after ${Date.now() - started} ms`);
          const javaWrote = await writer.writeTryLock(name, 0);
          if (javaWrote) await writer.writeUnlock(name);
          check(!javaWrote, 'not-excluded', () => `a Java writer got in beside the Node reader after ${Date.now() - started} ms`);
          await sleep(150);
        }
        check(!signal.aborted, 'reader-dropped', () => 'the Node reader was told it lost the lock');
      } finally {
        if (javaReads) await reader.readUnlock(name).catch(() => undefined);
        release.resolve();
        await reading.catch(() => undefined);
        await app.close();
      }
    }

    it('readers of both languages share; a writer of either excludes both (lost-update counter)', async () => {
      await exclusion('redisson');
    });

    it("a Java read unlock leaves the Node reader's hold, which outlives 3 × the watchdog beside a Java reader that leaves", async () => {
      await readerSurvives('redisson');
    });

    it('on the native layout the same scenarios report the violation', async () => {
      await expect(exclusion('native')).rejects.toMatchObject({ code: 'not-excluded' });
      await expect(readerSurvives('native')).rejects.toMatchObject({ code: 'reader-dropped' });
    });
  });
});
