import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService, type LockModuleOptions } from '../../lib';
import { createLockApp, sleep } from '../support/lock-app';
import type { TestRedis } from '../support/redis-server';
import { startRedisServers, stopRedisServers } from '../support/redis-servers';
import { buildRedissonDriver, RedissonProcess, redissonVersionsUnderTest, type RedissonHolder } from './redisson';
import { ScenarioViolation } from './scenario';

/**
 * RedLock and multi-locks across languages (test/interop/DESIGN-redisson-layout.md §3.5, §8): a Java
 * `RedissonRedLock` and a Node RedLock of one name over the same three standalone masters, and a Java
 * `RedissonMultiLock` over A,B beside a Node multi-lock over B,C (they share B). Each scenario runs
 * both ways (Java holds first, Node holds first): the one holding excludes the other (an explicit
 * `tryLock` that must be refused), a release lets the other in, then both contend with a lost-update
 * counter under the lock. On `layout: 'redisson'` it must pass; on `layout: 'native'` it must fail with
 * a ScenarioViolation from an explicit check, never a timeout: proof that it can see a wrong layout.
 *
 * Opt-in: INTEROP=1 (builds the Redisson driver jars, starts a JVM per version). REDISSON_VERSION narrows.
 */

const enabled = process.env.INTEROP === '1';
const versions = redissonVersionsUnderTest();
const WATCHDOG_MS = 3_000;
/** How long the side that must be refused tries (a refusal is the expected answer: short). */
const REFUSED_WAIT_MS = 300;
/** How long the other side may take to get in after a release (a generous bound). */
const GRANTED_WAIT_MS = 10_000;
/** Acquisitions per side in the lost-update phase. */
const ROUNDS = 4;
const GAP_MS = 3;

if (!enabled) process.stderr.write('interop/red-lock.spec: skipped (set INTEROP=1 to drive a real Java Redisson)\n');
const describeInterop = enabled ? describe : describe.skip;
const suffix = enabled ? '' : ' [skipped: set INTEROP=1 to run]';

jest.setTimeout(60_000);



/** One side of a scenario: a lock of one language, and the lost-update probe's step in that language. */
interface Party {
  readonly name: string;
  acquire(): Promise<void>;
  tryAcquire(waitMs: number): Promise<boolean>;
  release(): Promise<void>;
  /** GET, pause, SET + 1 of the counter: not atomic, so two holders at once lose an update. */
  increment(counter: string): Promise<void>;
}

interface Topology {
  readonly java: RedissonProcess;
  readonly masters: readonly TestRedis[];
  /** A raw client of master 0, where both languages' counters and the multi-lock live. */
  readonly raw: Redis;
}

const nodeIncrement = (raw: Redis) => async (counter: string) => {
  const value = Number((await raw.get(counter)) ?? 0);
  await sleep(GAP_MS);
  await raw.set(counter, value + 1);
};

function javaRedLock(holder: RedissonHolder, name: string, masters: readonly string[]): Party {
  return {
    name: `Java RedissonRedLock ${name}`,
    acquire: () => holder.redLock(name, masters, { timeoutMs: 30_000 }),
    tryAcquire: (waitMs) => holder.redTryLock(name, masters, waitMs, 30_000),
    release: () => holder.redUnlock(name),
    increment: async (counter) => void (await holder.incr(counter, GAP_MS)),
  };
}

function nodeRedLock(app: TestingModule, raw: Redis, name: string): Party {
  const lock = app.get(LockService).getRedLock(name);
  return {
    name: `Node RedLock ${name}`,
    acquire: () => lock.lock(),
    tryAcquire: (waitTime) => lock.tryLock({ waitTime }),
    release: () => lock.unlock(),
    increment: nodeIncrement(raw),
  };
}

function javaMultiLock(holder: RedissonHolder, names: readonly string[]): Party {
  return {
    name: `Java RedissonMultiLock ${names.join(',')}`,
    acquire: () => holder.multiLock(names, { timeoutMs: 30_000 }),
    tryAcquire: (waitMs) => holder.multiTryLock(names, waitMs),
    release: () => holder.multiUnlock(names),
    increment: async (counter) => void (await holder.incr(counter, GAP_MS)),
  };
}

function nodeMultiLock(app: TestingModule, raw: Redis, names: readonly string[]): Party {
  const service = app.get(LockService);
  const lock = service.getMultiLock(...names.map((n) => service.getLock(n)));
  return {
    name: `Node multi-lock ${names.join(',')}`,
    acquire: () => lock.lock(),
    tryAcquire: (waitTime) => lock.tryLock({ waitTime }),
    release: () => lock.unlock(),
    increment: nodeIncrement(raw),
  };
}

/**
 * `first` holds, `second` must be refused; `first` releases, `second` gets in and releases; then both
 * take turns `ROUNDS` times each, incrementing `counter` under the lock. Whatever a party still holds
 * when a check fails is released before the violation propagates.
 */
async function exclusionScenario(first: Party, second: Party, raw: Redis, counter: string): Promise<void> {
  const holding = new Set<Party>();
  const acquired = (party: Party) => holding.add(party);
  const release = async (party: Party) => {
    holding.delete(party);
    await party.release();
  };
  try {
    await first.acquire();
    acquired(first);
    if (await second.tryAcquire(REFUSED_WAIT_MS)) {
      acquired(second);
      throw new ScenarioViolation('not-excluded', `${second.name} was granted while ${first.name} held`);
    }
    await release(first);
    if (!(await second.tryAcquire(GRANTED_WAIT_MS))) throw new Error(`${second.name} was not granted within ${GRANTED_WAIT_MS} ms of the release`);
    acquired(second);
    await release(second);

    // A party is inside from its acquisition's answer until it sends its release: both inside at
    // once means two real holds overlapped.
    const inside = new Set<Party>();
    const contend = async (party: Party) => {
      for (let i = 0; i < ROUNDS; i++) {
        await party.acquire();
        acquired(party);
        try {
          const other = [...inside][0];
          if (other) throw new ScenarioViolation('not-excluded', `${party.name} was granted while ${other.name} held`);
          inside.add(party);
          await party.increment(counter);
        } finally {
          inside.delete(party);
          await release(party);
        }
      }
    };
    await Promise.all([contend(first), contend(second)]);
    const count = Number(await raw.get(counter));
    if (count !== 2 * ROUNDS) throw new ScenarioViolation('lost-update', `${counter} is ${count} after ${2 * ROUNDS} increments under the lock`);
  } finally {
    await Promise.allSettled([...holding].map((party) => party.release()));
  }
}

let names = 0;

/** The Node module of a scenario: the layout under test, master 0 as its Redis, the three masters for RedLock. */
function nodeOptions(topology: Topology, layout: 'redisson' | 'native'): LockModuleOptions {
  return {
    redis: topology.masters[0].url,
    layout,
    watchdogTimeout: WATCHDOG_MS,
    redlock: { clients: topology.masters.map((m) => m.url), masterTimeout: 1_000 },
  };
}

async function redLockScenario(topology: Topology, layout: 'redisson' | 'native', holdsFirst: 'java' | 'node'): Promise<void> {
  const { java, raw } = topology;
  const name = `interop-red:${java.version}:${layout}:${holdsFirst}:${++names}`;
  const app = await createLockApp(nodeOptions(topology, layout));
  try {
    const javaSide = javaRedLock(java.holder(`red-${names}`), name, topology.masters.map((m) => m.url));
    const nodeSide = nodeRedLock(app, raw, name);
    const [first, second] = holdsFirst === 'java' ? [javaSide, nodeSide] : [nodeSide, javaSide];
    await exclusionScenario(first, second, raw, `${name}:counter`);
    // Nothing left on any master: each side's release deleted what the other could see.
    for (const master of topology.masters) expect(await master.client().exists(name)).toBe(0);
  } finally {
    await app.close();
  }
}

async function multiLockScenario(topology: Topology, layout: 'redisson' | 'native', holdsFirst: 'java' | 'node'): Promise<void> {
  const { java, raw } = topology;
  const base = `interop-multi:${java.version}:${layout}:${holdsFirst}:${++names}`;
  const [a, b, c] = ['A', 'B', 'C'].map((n) => `${base}:${n}`);
  const app = await createLockApp(nodeOptions(topology, layout));
  try {
    const javaSide = javaMultiLock(java.holder(`multi-${names}`), [a, b]);
    const nodeSide = nodeMultiLock(app, raw, [b, c]);
    const [first, second] = holdsFirst === 'java' ? [javaSide, nodeSide] : [nodeSide, javaSide];
    await exclusionScenario(first, second, raw, `${base}:counter`);
    expect(await raw.exists(a, b, c)).toBe(0);
  } finally {
    await app.close();
  }
}

describeInterop.each(versions)(`RedLock and multi-lock across Node and Java Redisson %s, 3 standalone masters${suffix}`, (version) => {
  let topology: Topology;
  beforeAll(async () => {
    buildRedissonDriver(version);
    const masters = await startRedisServers(3);
    const java = await RedissonProcess.start({ version, address: masters[0].url, watchdogMs: WATCHDOG_MS });
    topology = { java, masters, raw: masters[0].client() };
  }, 600_000);
  afterAll(async () => {
    await topology?.java.close();
    await stopRedisServers(topology?.masters);
  });

  it.each(['java', 'node'] as const)('RedLock, layout redisson, %s holds first: excluded both ways, no update lost', async (holdsFirst) => {
    await redLockScenario(topology, 'redisson', holdsFirst);
  });

  it.each(['java', 'node'] as const)('RedLock, layout native, %s holds first: refused by an explicit check', async (holdsFirst) => {
    await expect(redLockScenario(topology, 'native', holdsFirst)).rejects.toMatchObject({ name: 'ScenarioViolation', code: 'not-excluded' });
  });

  it.each(['java', 'node'] as const)('multi-lock (Java A,B; Node B,C), layout redisson, %s holds first: excluded on B, no update lost', async (holdsFirst) => {
    await multiLockScenario(topology, 'redisson', holdsFirst);
  });

  it.each(['java', 'node'] as const)('multi-lock (Java A,B; Node B,C), layout native, %s holds first: refused by an explicit check', async (holdsFirst) => {
    await expect(multiLockScenario(topology, 'native', holdsFirst)).rejects.toMatchObject({ name: 'ScenarioViolation', code: 'not-excluded' });
  });
});
