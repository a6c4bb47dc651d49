import { clusterUnsupportedReason } from '../support/redis-binaries';
import { exclusion, fencing, killedHolder, PlainLockWorld, reentry, renewal, wakeUp } from './plain-lock.scenarios';
import { buildRedissonDriver, RedissonProcess, redissonVersionsUnderTest } from './redisson';
import { bothWays, clusterRedis, DIRECTIONS, Layout, nodeLocks, NodeLocks, ScenarioRedis, standaloneRedis, startJava } from './scenario';

/**
 * The plain lock across languages (issue 33, test/interop/DESIGN-redisson-layout.md §8): Java
 * Redisson `RLock`/`RFencedLock` and our `LockService` locks of the same name exclude and wake each
 * other with `layout: 'redisson'`, both ways, on a standalone Redis and a 3-master Cluster (sharded
 * pub/sub), for each Redisson version. Every scenario also runs on `layout: 'native'` and must fail
 * there with a named violation: proof that it can see a wrong layout.
 *
 * Opt-in: INTEROP=1 (Maven-built jars, JVMs). REDISSON_VERSION=3 or 4 narrows the versions.
 */

const enabled = process.env.INTEROP === '1';
const WATCHDOG_MS = 1_500;
const violation = (code: string) => ({ name: 'ScenarioViolation', code });

type Topology = readonly [string, () => Promise<ScenarioRedis>];
const clusterSkip = clusterUnsupportedReason();
const topologies: Topology[] = [['standalone Redis', standaloneRedis]];
if (!clusterSkip) topologies.push(['a 3-master Redis Cluster', clusterRedis]);
else if (enabled) process.stderr.write(`plain-lock.spec: cluster cases skipped: ${clusterSkip}\n`);
const cases = redissonVersionsUnderTest().flatMap((version) => topologies.map(([where, start]) => [version, where, start] as const));

if (!enabled) process.stderr.write('plain-lock.spec: skipped (set INTEROP=1 to drive a real Java Redisson)\n');
const describeInterop = enabled ? describe : describe.skip;
const title = `plain lock, Node and Redisson %s on %s${enabled ? '' : ' [skipped: set INTEROP=1 to run]'}`;

jest.setTimeout(60_000);

describeInterop.each(cases)(title, (version, _where, startRedis) => {
  let redis: ScenarioRedis;
  let a: RedissonProcess;
  let b: RedissonProcess;
  let doomed: RedissonProcess | undefined;
  const modules = new Map<string, NodeLocks>();
  let n = 0;

  const world: PlainLockWorld = {
    get redis() {
      return redis;
    },
    watchdogMs: WATCHDOG_MS,
    get a() {
      return a;
    },
    get b() {
      return b;
    },
    node: (layout) => [modules.get(`${layout}-1`)!, modules.get(`${layout}-2`)!],
    fenced: (layout) => modules.get(layout === 'redisson' ? 'redisson-fenced' : 'native-1')!,
    async doomedJava() {
      if (!doomed?.alive) doomed = await startJava(redis, version, WATCHDOG_MS);
      return doomed;
    },
    fresh: (what) => `interop:${version}:${what}:${++n}`,
  };

  beforeAll(async () => {
    buildRedissonDriver(version);
    redis = await startRedis();
    const node = (key: string, layout: Layout, fencedLocks = false) =>
      nodeLocks({ layout, redis: redis.nodeConnection(), watchdogTimeout: WATCHDOG_MS, fencedLocks }).then((m) => void modules.set(key, m));
    [a, b, doomed] = await Promise.all([
      startJava(redis, version, WATCHDOG_MS),
      startJava(redis, version, WATCHDOG_MS),
      startJava(redis, version, WATCHDOG_MS), // for the kill scenario
      node('redisson-1', 'redisson'),
      node('redisson-2', 'redisson'),
      node('redisson-fenced', 'redisson', true),
      node('native-1', 'native'),
      node('native-2', 'native'),
    ]);
  }, 180_000);

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close(), doomed?.close(), ...[...modules.values()].map((m) => m.close())]);
    await redis?.stop();
  });

  it('1. exclusion: Java threads of two JVMs and Node callers of two modules lose no increment of a counter', async () => {
    await exclusion(world, 'redisson');
    await expect(exclusion(world, 'native')).rejects.toMatchObject(violation('lost-update'));
  });

  it.each(DIRECTIONS)('2. wake-up (%s): the waiter of the other language gets the lock at the release, not at the lease end', async (direction) => {
    await wakeUp(world, 'redisson', direction);
    await expect(wakeUp(world, 'native', direction)).rejects.toMatchObject(violation('not-excluded'));
  });

  it.each(DIRECTIONS)('3. re-entry (%s): count 2 in the owner field, the other side refused until both unlocks', async (direction) => {
    await reentry(world, 'redisson', direction);
    await expect(reentry(world, 'native', direction)).rejects.toMatchObject(violation('not-excluded'));
  });

  it('4. renewal past the lease (both ways at once): 3 x the watchdog timeout, the other side refused, 0 < PTTL <= watchdog', async () => {
    await bothWays((direction) => renewal(world, 'redisson', direction));
    await expect(bothWays((direction) => renewal(world, 'native', direction))).rejects.toMatchObject(violation('not-excluded'));
  });

  it('5. a SIGKILLed holder (JVM / Node child, both ways at once): the other side gets in after the kill, within the watchdog timeout', async () => {
    // Native first: it fails before its kill, so the JVM kept for killing serves the Redisson run too.
    await expect(bothWays((direction) => killedHolder(world, 'native', direction))).rejects.toMatchObject(violation('not-excluded'));
    await bothWays((direction) => killedHolder(world, 'redisson', direction));
  });

  it.each(DIRECTIONS)('6. fencing (%s first): Java RFencedLock and Node fencedLocks tokens grow across languages; the token key never expires', async (direction) => {
    await fencing(world, 'redisson', direction);
    await expect(fencing(world, 'native', direction)).rejects.toMatchObject(violation('token-regressed'));
  });
});
