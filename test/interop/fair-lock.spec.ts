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
import { ScenarioViolation } from './scenario';

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

/**
 * Scenario 6 on `layout`: `holdsFirst` takes the lock, then the others queue alternating languages
 * (Java first: n1 j1 n2 j2; Node first: j1 n1 j2 n2). Rejects with a ScenarioViolation when the
 * order or exclusion breaks.
 */
async function fairOrderScenario(topology: Topology, layout: 'redisson' | 'native', holdsFirst: 'java' | 'node'): Promise<void> {
  const { java, raw } = topology;
  const name = `interop-fair:${java.version}:${layout}:${holdsFirst}:${++names}`;
  const queue = RedissonNames.fairQueue(name);
  const apps = await Promise.all([0, 1].map(() => createLockApp({ ...topology.nodeOptions(), layout, watchdogTimeout: WATCHDOG_MS })));
  const tracker = new HoldTracker();
  // Java owners asked before anyone waits: a holder's commands run one after another, as on one thread.
  const javaOwners = new Map<string, string>();
  for (const holder of ['j0', 'j1', 'j2']) javaOwners.set(holder, await java.holder(holder).owner());
  const party = (who: string): Party =>
    who.startsWith('j') ? javaParty(who, java.holder(who), name) : nodeParty(who, apps[Number(who.slice(1)) % 2], name);
  const first = party(holdsFirst === 'java' ? 'j0' : 'n0');
  const waiters = (holdsFirst === 'java' ? ['n1', 'j1', 'n2', 'j2'] : ['j1', 'n1', 'j2', 'n2']).map(party);
  const running: Array<Promise<void>> = [];
  let firstHolds = false;
  try {
    await first.acquire();
    tracker.enter(first.name);
    firstHolds = true;
    for (const [i, waiter] of waiters.entries()) {
      let settled = false;
      const run = waiter.acquire().then(async () => {
        try {
          tracker.enter(waiter.name);
        } finally {
          tracker.leave(waiter.name);
          await waiter.release();
        }
      });
      const tracked = run.finally(() => (settled = true));
      tracked.catch(() => undefined); // read below (awaited), not an unhandled rejection meanwhile
      running.push(tracked);
      // Joined once the queue has it; a waiter that got the lock meanwhile was not excluded by the first.
      const deadline = Date.now() + STEP_TIMEOUT_MS;
      while ((await raw.llen(queue)) < i + 1) {
        if (settled) {
          await running[i]; // its ScenarioViolation, if it entered beside the first holder
          throw new ScenarioViolation('not-excluded', `${waiter.name} got the lock while ${first.name} held it`);
        }
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${waiter.name} to join ${queue}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
    const queued = await raw.lrange(queue, 0, -1);
    for (const [i, waiter] of waiters.entries()) {
      if (javaOwners.has(waiter.name)) expect(queued[i]).toBe(javaOwners.get(waiter.name));
      else expect(queued[i]).toMatch(/^[0-9a-f-]{36}:\d+$/); // a Node owner: Redisson's shape
    }

    tracker.leave(first.name);
    firstHolds = false;
    await first.release();
    await Promise.all(running);
    const expected = [first, ...waiters].map((p) => p.name);
    if (tracker.order.join() !== expected.join()) {
      throw new ScenarioViolation('out-of-order', `granted ${tracker.order.join(' ')}, queued ${expected.join(' ')}`);
    }
    expect(await raw.exists(name, queue, RedissonNames.fairTimeouts(name))).toBe(0);
  } finally {
    if (firstHolds) await first.release().catch(() => undefined);
    // Every started waiter gives the lock back once it gets it; wait for them before closing.
    await Promise.allSettled(running);
    await Promise.all(apps.map((app) => app.close()));
  }
}

/** Both directions on one topology: each passes on the Redisson layout and is refused on the native one. */
function scenarios(topology: () => Topology): void {
  it.each(['java', 'node'] as const)('layout redisson, %s holds first: every waiter gets the lock in queue order, one at a time', async (holdsFirst) => {
    await fairOrderScenario(topology(), 'redisson', holdsFirst);
  });

  it.each(['java', 'node'] as const)('layout native, %s holds first: refused by an explicit check', async (holdsFirst) => {
    await expect(fairOrderScenario(topology(), 'native', holdsFirst)).rejects.toMatchObject({ name: 'ScenarioViolation', code: 'not-excluded' });
  });
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

  scenarios(() => topology);
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

    scenarios(() => topology);
  });
});
