import Redis from 'ioredis';
import { QUICK, type BenchSettings } from '../../bench/harness/settings';
import { COST_QUICK, figures } from '../../bench/workloads/cost';
import { runJavaW1, runJavaW4 } from '../../bench/workloads/redisson-java';
import { runJavaCost } from '../../bench/workloads/redisson-java-cost';
import { redisServerBin } from '../support/redis-binaries';
import { startRedisBinary, TestRedis } from '../support/redis-server';
import { buildRedissonDriver, REDISSON_4, redissonVersionsUnderTest } from './redisson';

/**
 * The bench's Java Redisson anchor (`interop.RedissonBench`, run by bench/workloads/redisson-java.ts)
 * measures what it claims: every W1 call is one Redisson RLock acquire and release (Redis ran
 * Redisson's scripts' effects, RL §3.1-3.2, once per call), and W4's two JVMs hand one lock over,
 * each acquisition after the other's release. No timing is asserted.
 *
 * Opt-in: INTEROP=1 (builds the driver jar, starts JVMs). REDISSON_VERSION narrows the versions.
 */
const enabled = process.env.INTEROP === '1';
if (!enabled) process.stderr.write('redisson-bench.spec: skipped (set INTEROP=1 to run the Java bench program)\n');
const describeInterop = enabled ? describe : describe.skip;
const title = enabled ? 'the bench program of Redisson %s' : 'the bench program of Redisson %s [skipped: set INTEROP=1 to run]';

// JVMs of a test need no pinning (the bench pins its own).
process.env.BENCH_NO_PIN = '1';
jest.setTimeout(120_000);

/** Small sizes, and no JIT warm-up to wait for: the first check of the warm-up loop (100 calls) ends it. */
const settings: BenchSettings = {
  ...QUICK,
  w1: { ops: 200, warmup: 50 },
  w4: { handoffs: 10, holdMs: 10, holdJitterMs: 5 },
  jvm: { jitQuietMs: 0, jitMaxMs: 0, warmupHandoffs: 2 },
};

/** `calls` of each command in INFO commandstats (script internals included). */
async function commandCalls(client: Redis): Promise<Record<string, number>> {
  const calls: Record<string, number> = {};
  for (const match of (await client.info('commandstats')).matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) calls[match[1]] = Number(match[2]);
  return calls;
}

describeInterop.each(redissonVersionsUnderTest())(title, (version) => {
  let redis: TestRedis;
  let client: Redis;
  let jar: string;

  beforeAll(async () => {
    jar = buildRedissonDriver(version);
    redis = await startRedisBinary(redisServerBin());
    client = redis.client();
  }, 600_000);

  afterAll(async () => {
    client?.disconnect();
    await redis?.stop();
  });

  beforeEach(async () => {
    await client.flushall();
    await client.config('RESETSTAT');
  });

  it('W1: each call is one RLock acquire (HINCRBY +1) and one release (HINCRBY -1, DEL, PUBLISH 0), every lock released', async () => {
    const result = await runJavaW1(jar, redis.url, settings, 60_000);
    expect(result).toMatchObject({ ops: 200, redisson: version });
    expect(result.warmupOps).toBeGreaterThanOrEqual(50);
    expect(result.opsPerSec).toBeGreaterThan(0);
    expect(result.p50Ms).toBeLessThanOrEqual(result.p99Ms);
    const calls = await commandCalls(client);
    const total = result.ops + result.warmupOps;
    expect(calls.hincrby).toBe(2 * total);
    expect(calls.publish).toBe(total);
    // The unlock script's DEL of the lock, then Redisson's DEL of its unlock latch (RL §3.2).
    expect(calls.del).toBe(2 * total);
    expect(await client.keys('bench:w1:*')).toEqual([]);
  });

  it('W4: two JVMs hand one lock over, every acquisition after the release it follows, none given up', async () => {
    const result = await runJavaW4(jar, redis.url, settings, 60_000);
    expect(result.handoffs + result.late).toBe(settings.w4.handoffs);
    expect(result.giveUps).toBe(0);
    expect(result.warmupHandoffs).toBe(2);
    expect(result.latenciesMs).toHaveLength(result.handoffs);
    for (const latency of result.latenciesMs) expect(latency).toBeGreaterThan(0);
    // Every release of a hold publishes the wake-up the other JVM's waiter waits for.
    const calls = await commandCalls(client);
    expect(calls.publish).toBeGreaterThanOrEqual(settings.w4.handoffs + settings.jvm.warmupHandoffs);
    expect(await client.exists('bench:w4:key')).toBe(0);
  });
});

describeInterop(`the cost section's Java Redisson ${REDISSON_4} subject`, () => {
  let redis: TestRedis;
  let client: Redis;

  beforeAll(async () => {
    buildRedissonDriver(REDISSON_4);
    redis = await startRedisBinary(redisServerBin());
    client = redis.client();
  }, 600_000);

  afterAll(async () => {
    client?.disconnect();
    await redis?.stop();
  });

  it.each(['lock', 'trylock'] as const)('%s + unlock(): two scripts and the latch DEL sent per operation, the scripts named, every lock released', async (op) => {
    const params = { ...COST_QUICK, ops: 100, warmup: 50, luaOps: 40, jitQuietMs: 0, jitMaxMs: 0 };
    const raw = await runJavaCost(op, redis.url, params, 60_000);
    expect(raw).toMatchObject({ ops: 100, luaOps: 40, giveUps: 0 });
    expect(raw.server.evalsha.calls).toBe(200);
    expect(raw.server.publish.calls).toBe(100);
    // MONITOR's count, scaled to the window: the two EVALSHAs and the latch DEL; the script's DEL is
    // not sent (a PING of Redisson's connection check may come on top).
    expect(raw.sent).toMatchObject({ evalsha: 200, del: 100 });
    // The watchdog's renewal may come on top, when its timer fires within the window.
    const scripts = Object.fromEntries(Object.values(raw.lua).map((s) => [s.name, s.calls]));
    expect(scripts).toMatchObject({ 'redisson lock': 40, 'redisson unlock': 40 });
    expect(Object.keys(scripts).filter((name) => !/^redisson (lock|unlock|watchdog renewal)$/.test(name))).toEqual([]);
    const f = figures(raw);
    expect(f.sentPerOp).toBeGreaterThanOrEqual(3);
    expect(f.redisUsPerOp).toBeGreaterThan(0);
    expect(f.redisUsPerOp).toBeLessThan(f.naiveUsPerOp);
    expect(await client.keys('cost:*')).toEqual([]);
  });
});
