import type { TestingModule } from '@nestjs/testing';
import type { Cluster } from 'ioredis';
import type Redis from 'ioredis';
import { SemaphoreService, type Permit } from '../../lib';
import { RedissonNames } from '../../lib/layouts/redisson-names';
import { createLockApp, waitersQueued } from '../support/lock-app';
import { clusterUnsupportedReason, redisServerBin } from '../support/redis-binaries';
import { shardSubscribers, startRedisCluster, type TestRedisCluster } from '../support/redis-cluster';
import { startRedisBinary, type TestRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';
import { buildRedissonDriver, RedissonProcess, redissonVersionsUnderTest } from './redisson';
import { ScenarioViolation } from './scenario';

/**
 * Permits shared with a real Java Redisson (DESIGN-redisson-layout §8 scenario 8): Java sets the
 * limit of an RPermitExpirableSemaphore, Node (`SemaphoreService`, layout 'redisson') and Java PES
 * take permits of the same count, a 4th is refused on either side (PES and RSemaphore), and a
 * release on one side wakes a waiter on the other at once. The same run on `layout: 'native'` must
 * fail with the violation `over-limit`: proof the checks see a wrong layout.
 *
 * Opt-in: INTEROP=1. Versions: REDISSON_VERSION (default 3.52.0 and 4.7.0).
 */

const enabled = process.env.INTEROP === '1';
const versions = redissonVersionsUnderTest();
if (!enabled) process.stderr.write('interop/semaphore.spec: skipped (set INTEROP=1 to run against a real Java Redisson)\n');
const clusterSkip = enabled ? clusterUnsupportedReason() : undefined;

/** Node's watchdog lease: its permits' deadlines are this far, so only a message wakes a waiter sooner. */
const NODE_LEASE_MS = 30_000;
/** A wake-up by message must come this fast (the aim is ~100 ms; 2 shared cores and a JVM). */
const WAKE_BOUND_MS = 500;


interface Topology {
  readonly kind: 'standalone' | 'cluster';
  readonly java: RedissonProcess;
  /** A connection for the Node module (a new one per module). */
  redis(): string | Cluster;
  /** How many clients listen on `channel` (PUBSUB NUMSUB, or SHARDNUMSUB on the channel's master). */
  subscribers(channel: string): Promise<number>;
}

/** The scenario on `layout`; resolves with the two wake-up times, rejects with a ScenarioViolation. */
async function runScenario(topology: Topology, name: string, layout: 'redisson' | 'native'): Promise<{ javaToNode: number; nodeToJava: number }> {
  const { java } = topology;
  const j1 = java.holder(`pes-a-${layout}`);
  const j2 = java.holder(`pes-b-${layout}`);
  const channel = RedissonNames.semaphoreChannel(name);
  expect(await j1.pesTrySetPermits(name, 3)).toBe(true);
  const app: TestingModule = await createLockApp({ redis: topology.redis(), layout, watchdogTimeout: NODE_LEASE_MS });
  const held: Permit[] = [];
  const javaIds: string[] = [];
  try {
    const semaphore = app.get(SemaphoreService).getSemaphore(name, { permits: 3 });
    const two = await semaphore.tryAcquire({ take: 2 });
    if (!two) throw new ScenarioViolation('not-granted', 'Node could not take 2 of 3 free permits');
    held.push(two);
    const javaOne = await j1.pesTryAcquire(name, 0);
    if (javaOne === null) throw new ScenarioViolation('not-granted', 'Java PES could not take the 3rd permit');
    javaIds.push(javaOne);

    // A 4th permit, from either side, must be refused.
    const nodeFourth = await semaphore.tryAcquire();
    if (nodeFourth) {
      held.push(nodeFourth);
      throw new ScenarioViolation('over-limit', 'Node took a 4th permit while Node held 2 and Java 1');
    }
    const javaFourth = await j2.pesTryAcquire(name, 0);
    if (javaFourth !== null) {
      javaIds.push(javaFourth);
      throw new ScenarioViolation('over-limit', 'Java PES took a 4th permit while Node held 2 and Java 1');
    }
    if (await j2.semTryAcquire(name, 1, 0)) {
      await j2.semRelease(name, 1);
      throw new ScenarioViolation('over-limit', 'Java RSemaphore took a 4th permit while Node held 2 and Java 1');
    }

    // Java releases, a Node waiter gets in: its only other wake would be Node's own deadlines, 30 s away.
    const nodeWaiting = semaphore.acquire({ waitTime: 20_000 });
    await waitersQueued(app, 1, channel);
    let releasedAt = Date.now();
    await j1.pesRelease(name, javaIds.shift()!);
    held.push(await nodeWaiting);
    const javaToNode = Date.now() - releasedAt;

    // Node releases, a Java waiter gets in: Java would otherwise wait for Node's deadline, 30 s away.
    await waitFor(async () => (await topology.subscribers(channel)) === 0, { what: `Node's waiter to leave ${channel}` });
    let javaGotAt = 0;
    const javaWaiting = j2.pesAcquire(name, { timeoutMs: 40_000 }).then((id) => {
      javaGotAt = Date.now();
      javaIds.push(id);
    });
    await waitFor(async () => (await topology.subscribers(channel)) >= 1, { what: `the Java waiter on ${channel}` });
    expect(javaGotAt).toBe(0);
    releasedAt = Date.now();
    await held.pop()!.release();
    await javaWaiting;
    const nodeToJava = javaGotAt - releasedAt;
    return { javaToNode, nodeToJava };
  } finally {
    for (const permit of held) await permit.release().catch(() => undefined);
    for (const id of javaIds) await j1.pesRelease(name, id).catch(() => undefined);
    await app.close();
  }
}

jest.setTimeout(60_000);

for (const version of versions) {
  const suites: Array<['standalone' | 'cluster', boolean]> = [
    ['standalone', enabled],
    ['cluster', enabled && !clusterSkip],
  ];
  for (const [kind, on] of suites) {
    const title = on ? `semaphore shared with Redisson ${version} (${kind})` : `semaphore shared with Redisson ${version} (${kind}) [skipped: ${enabled ? clusterSkip : 'set INTEROP=1'}]`;
    (on ? describe : describe.skip)(title, () => {
      let redis: TestRedis | undefined;
      let cluster: TestRedisCluster | undefined;
      let raw: Redis | Cluster;
      let topology: Topology;
      let n = 0;
      const fresh = (what: string): string => `interop:${version}:${kind}:sem-${what}:${++n}`;

      beforeAll(async () => {
        buildRedissonDriver(version);
        if (kind === 'standalone') {
          const server = (redis = await startRedisBinary(redisServerBin()));
          raw = server.client();
          const client = raw as Redis;
          const java = await RedissonProcess.start({ version, address: server.url });
          topology = {
            kind,
            java,
            redis: () => server.url,
            subscribers: async (channel) => Number(((await client.call('PUBSUB', 'NUMSUB', channel)) as [string, number])[1]),
          };
        } else {
          const servers = (cluster = await startRedisCluster(3));
          raw = servers.cluster();
          const java = await RedissonProcess.start({ version, cluster: servers.masters.map((m) => m.url) });
          topology = {
            kind,
            java,
            redis: () => servers.cluster(),
            // Redisson AUTO on Redis 7: SSUBSCRIBE on the channel's master.
            subscribers: async (channel) => shardSubscribers(await servers.masterOf(channel), channel),
          };
        }
      }, 600_000);

      afterAll(async () => {
        await topology?.java.close();
        await redis?.stop();
        await cluster?.stop();
      });

      it("layout 'redisson': Node and Java PES/RSemaphore count the same 3 permits, and each side's release wakes the other's waiter", async () => {
        const name = fresh('redisson');
        const { javaToNode, nodeToJava } = await runScenario(topology, name, 'redisson');
        process.stdout.write(`Redisson ${version} ${kind}: wake Java->Node ${javaToNode} ms, Node->Java ${nodeToJava} ms\n`);
        expect(javaToNode).toBeLessThan(WAKE_BOUND_MS);
        expect(nodeToJava).toBeLessThan(WAKE_BOUND_MS);
        // Everything given back: Redisson's counter at the limit, no lease left.
        await waitFor(async () => (await raw.get(name)) === '3', { what: `${name} back at 3` });
        expect(await raw.zcard(RedissonNames.semaphoreTimeouts(name))).toBe(0);
      });

      it("layout 'native': the same run fails with the explicit violation 'over-limit'", async () => {
        await expect(runScenario(topology, fresh('native'), 'native')).rejects.toMatchObject({ code: 'over-limit' });
      });
    });
  }
}
