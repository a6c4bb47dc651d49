import type { TestingModule } from '@nestjs/testing';
import type { Cluster } from 'ioredis';
import type Redis from 'ioredis';
import { FairLockService, type LockModuleOptions } from '../../lib';
import { RedissonNames } from '../../lib/layouts/redisson-names';
import { redisServerBin } from '../support/redis-binaries';
import { createLockApp } from '../support/lock-app';
import { describeOnCluster, startRedisCluster, type TestRedisCluster } from '../support/redis-cluster';
import { startRedisBinary, type TestRedis } from '../support/redis-server';
import { buildRedissonDriver, RedissonProcess, redissonVersionsUnderTest, type RedissonHolder } from './redisson';

/**
 * Scenario 6 of test/interop/DESIGN-redisson-layout.md §8, fair order across languages: a Java
 * RFairLock holds; Node n1, Java j1, Node n2, Java j2 queue one after another (each joins once the
 * one before it is in `redisson_lock_queue:{N}`); on release they get the lock in that order, one
 * at a time. On `layout: 'redisson'` it must pass; on `layout: 'native'` it must fail with a
 * ScenarioViolation from an explicit check (the Node waiters do not see Java's lock), never with a
 * timeout: proof that the scenario can see a wrong layout.
 *
 * Opt-in: INTEROP=1 (builds the Redisson driver jars, starts JVMs). REDISSON_VERSION narrows.
 */

const enabled = process.env.INTEROP === '1';
const versions = redissonVersionsUnderTest();
const WATCHDOG_MS = 3_000;
/** A Node waiter's wait: finite, so it is also its queue deadline's `wait` (RL §4.1). */
const NODE_WAIT_MS = 20_000;
const STEP_TIMEOUT_MS = 15_000;

if (!enabled) process.stderr.write('interop/fair-lock.spec: skipped (set INTEROP=1 to drive a real Java Redisson)\n');
const describeInterop = enabled ? describe : describe.skip;
const suffix = enabled ? '' : ' [skipped: set INTEROP=1 to run]';

jest.setTimeout(60_000);

type ViolationCode = 'not-excluded' | 'out-of-order';

/** What a scenario found wrong, from an explicit check (never a timeout). */
class ScenarioViolation extends Error {
  constructor(
    readonly code: ViolationCode,
    message: string,
  ) {
    super(`${code}: ${message}`);
    this.name = 'ScenarioViolation';
  }
}

/**
 * Who holds the lock, as the parties report it: a party enters after its acquisition answered and
 * leaves before it sends its release, so two parties inside at once means two real holds overlapped.
 */
class HoldTracker {
  private readonly inside = new Set<string>();
  readonly order: string[] = [];

  enter(who: string): void {
    if (this.inside.size > 0) throw new ScenarioViolation('not-excluded', `${who} was granted while ${[...this.inside].join(', ')} held the lock`);
    this.inside.add(who);
    this.order.push(who);
  }

  leave(who: string): void {
    this.inside.delete(who);
  }
}

/** One party of the scenario: takes the fair lock, and gives it back right after entering. */
interface Party {
  readonly name: string;
  acquire(): Promise<void>;
  release(): Promise<void>;
}

const javaParty = (name: string, holder: RedissonHolder, lock: string): Party => ({
  name,
  acquire: () => holder.fairLock(lock, { timeoutMs: 30_000 }),
  release: () => holder.fairUnlock(lock),
});

function nodeParty(name: string, app: TestingModule, lock: string): Party {
  const fair = app.get(FairLockService).getLock(lock);
  return {
    name,
    async acquire() {
      if (!(await fair.tryLock({ waitTime: NODE_WAIT_MS }))) throw new Error(`${name} was not granted within ${NODE_WAIT_MS} ms`);
    },
    release: () => fair.unlock(),
  };
}

/** The topology a scenario runs on: one Redis (standalone or cluster), its JVM, a Node client factory. */
interface Topology {
  readonly java: RedissonProcess;
  /** A raw client to read Redis with. */
  readonly raw: Redis | Cluster;
  /** Node module options reaching this Redis. */
  nodeOptions(): LockModuleOptions;
}

let names = 0;

/** Scenario 6 on `layout`; rejects with a ScenarioViolation when the order or exclusion breaks. */
async function fairOrderScenario(topology: Topology, layout: 'redisson' | 'native'): Promise<void> {
  const { java, raw } = topology;
  const name = `interop-fair:${java.version}:${layout}:${++names}`;
  const queue = RedissonNames.fairQueue(name);
  const apps = await Promise.all([0, 1].map(() => createLockApp({ ...topology.nodeOptions(), layout, watchdogTimeout: WATCHDOG_MS })));
  const tracker = new HoldTracker();
  const first = java.holder('j0');
  const parties = [
    nodeParty('n1', apps[0], name),
    javaParty('j1', java.holder('j1'), name),
    nodeParty('n2', apps[1], name),
    javaParty('j2', java.holder('j2'), name),
  ];
  const running: Array<Promise<void>> = [];
  let firstHolds = false;
  try {
    await first.fairLock(name);
    tracker.enter('j0');
    firstHolds = true;
    for (const [i, party] of parties.entries()) {
      let settled = false;
      const run = party.acquire().then(async () => {
        try {
          tracker.enter(party.name);
        } finally {
          tracker.leave(party.name);
          await party.release();
        }
      });
      const tracked = run.finally(() => (settled = true));
      tracked.catch(() => undefined); // read below (awaited), not an unhandled rejection meanwhile
      running.push(tracked);
      // Joined once the queue has it; a party that got the lock meanwhile was not excluded by j0.
      const deadline = Date.now() + STEP_TIMEOUT_MS;
      while ((await raw.llen(queue)) < i + 1) {
        if (settled) {
          await running[i]; // its ScenarioViolation, if it entered beside j0
          throw new ScenarioViolation('not-excluded', `${party.name} got the lock while j0 held it`);
        }
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${party.name} to join ${queue}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
    const queued = await raw.lrange(queue, 0, -1);
    const javaOwners = [await java.holder('j1').owner(), await java.holder('j2').owner()];
    expect(queued[1]).toBe(javaOwners[0]);
    expect(queued[3]).toBe(javaOwners[1]);
    for (const nodeOwner of [queued[0], queued[2]]) expect(nodeOwner).toMatch(/^[0-9a-f-]{36}:\d+$/);

    tracker.leave('j0');
    firstHolds = false;
    await first.fairUnlock(name);
    await Promise.all(running);
    const expected = ['j0', 'n1', 'j1', 'n2', 'j2'];
    if (tracker.order.join() !== expected.join()) {
      throw new ScenarioViolation('out-of-order', `granted ${tracker.order.join(' ')}, queued ${expected.join(' ')}`);
    }
    expect(await raw.exists(name, queue, RedissonNames.fairTimeouts(name))).toBe(0);
  } finally {
    if (firstHolds) await first.fairUnlock(name).catch(() => undefined);
    // Every started party gives the lock back once it gets it; wait for them before closing.
    await Promise.allSettled(running);
    await Promise.all(apps.map((app) => app.close()));
  }
}

describeInterop.each(versions)(`fair lock across Node and Java Redisson %s, standalone${suffix}`, (version) => {
  let redis: TestRedis;
  let topology: Topology;
  beforeAll(async () => {
    buildRedissonDriver(version);
    redis = await startRedisBinary(redisServerBin());
    const java = await RedissonProcess.start({ version, address: redis.url, watchdogMs: WATCHDOG_MS });
    topology = { java, raw: redis.client(), nodeOptions: () => ({ redis: redis.url }) };
  }, 600_000);
  afterAll(async () => {
    await topology?.java.close();
    await redis?.stop();
  });

  it('layout redisson: Node and Java waiters get the lock in queue order, one at a time', async () => {
    await fairOrderScenario(topology, 'redisson');
  });

  it('layout native: the same scenario is refused by an explicit check', async () => {
    await expect(fairOrderScenario(topology, 'native')).rejects.toMatchObject({ name: 'ScenarioViolation', code: 'not-excluded' });
  });
});

(enabled ? describeOnCluster : describe.skip)(`fair lock across Node and Java Redisson, 3-master cluster${suffix}`, () => {
  describe.each(versions)('Redisson %s', (version) => {
    let cluster: TestRedisCluster;
    let topology: Topology;
    beforeAll(async () => {
      buildRedissonDriver(version);
      cluster = await startRedisCluster(3);
      const nodes = cluster.startupNodes.map(({ host, port }) => `redis://${host}:${port}`);
      const java = await RedissonProcess.start({ version, cluster: nodes, watchdogMs: WATCHDOG_MS });
      topology = { java, raw: cluster.cluster(), nodeOptions: () => ({ redis: cluster.cluster() }) };
    }, 600_000);
    afterAll(async () => {
      await topology?.java.close();
      await cluster?.stop();
    });

    it('layout redisson (sharded pub/sub): Node and Java waiters get the lock in queue order', async () => {
      await fairOrderScenario(topology, 'redisson');
    });

    it('layout native: refused by an explicit check', async () => {
      await expect(fairOrderScenario(topology, 'native')).rejects.toMatchObject({ name: 'ScenarioViolation', code: 'not-excluded' });
    });
  });
});
