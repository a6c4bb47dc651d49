import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockService, ReadWriteLockService, SemaphoreService } from '../lib';
import { LuaScript } from '../lib/redis/lua-script';
import { CommandMonitor } from './support/command-monitor';
import { createLockApp } from './support/lock-app';
import { describeOnCluster, namesOnEveryMaster, startRedisCluster, type TestRedisCluster } from './support/redis-cluster';
import { startRedis, startRedisBinary, type TestRedis } from './support/redis-server';

/**
 * Scripts are loaded with SCRIPT LOAD, never sent as EVAL: Redis 7.4+ evicts EVAL-loaded scripts
 * beyond 500, and an evicted release came back NOSCRIPT and was resent after the next command, so
 * `run()` then `tryLock()` found the lock still held. See docs/architecture.md#one-round-trip.
 */

const SERVERS_DIR = process.env.REDIS_SERVERS_DIR || join(__dirname, '..', '..', 'shared', 'servers');
const REDIS_7_4 = join(SERVERS_DIR, 'redis-7.4.1', 'redis-server');

function onRedis74(): typeof describe {
  if (existsSync(REDIS_7_4)) return describe;
  process.stderr.write(`script-loading.spec: ${REDIS_7_4} is missing; the Redis 7.4 script eviction tests are skipped\n`);
  return describe.skip;
}

/** `run()` then a single `tryLock()` on every kind: each finds the lock the call released free. */
async function runThenTryLock(app: TestingModule, name: string): Promise<string[]> {
  const busy: string[] = [];
  const locks = app.get(LockService);
  await locks.run(name, async () => undefined);
  const plain = locks.getLock(name);
  if (await plain.tryLock()) await plain.unlock();
  else busy.push(`${name}: plain`);

  const fair = app.get(FairLockService);
  await fair.run(`${name}:fair`, async () => undefined);
  const fairLock = fair.getLock(`${name}:fair`);
  if (await fairLock.tryLock()) await fairLock.unlock();
  else busy.push(`${name}: fair`);

  const rw = app.get(ReadWriteLockService);
  await rw.runWrite(`${name}:rw`, async () => undefined);
  const write = rw.getReadWriteLock(`${name}:rw`).writeLock();
  if (await write.tryLock()) await write.unlock();
  else busy.push(`${name}: write`);

  const semaphores = app.get(SemaphoreService);
  await semaphores.run(`${name}:sem`, async () => undefined, { permits: 1 });
  const permit = await semaphores.getSemaphore(`${name}:sem`, { permits: 1 }).tryAcquire();
  if (permit) await permit.release();
  else busy.push(`${name}: semaphore`);
  return busy;
}

/** EVAL calls another client makes with `count` distinct scripts (each its own SHA). */
async function evalDistinctScripts(client: Redis, count: number, tag: string): Promise<void> {
  const pipeline = client.pipeline();
  for (let i = 0; i < count; i++) pipeline.eval(`return '${tag}:${i}'`, 0);
  await pipeline.exec();
}

/** `INFO stats`' evicted_scripts (Redis 7.4+). */
async function evictedScripts(client: Redis): Promise<number> {
  const info = await client.info('stats');
  return Number(/evicted_scripts:(\d+)/.exec(info)?.[1] ?? 0);
}

describe('scripts are loaded with SCRIPT LOAD', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url });
  });

  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('no script is ever sent as EVAL: each is loaded once per connection, then run by SHA', async () => {
    const monitor = await CommandMonitor.start(raw);
    try {
      const from = await monitor.mark(raw);
      for (let i = 0; i < 3; i++) expect(await runThenTryLock(app, `sl:first:${i}`)).toEqual([]);
      const to = await monitor.mark(raw);
      expect(monitor.count((args) => /^eval$/i.test(args[0]), { from, to })).toBe(0);
      const loads = monitor.count((args) => /^script$/i.test(args[0]) && /^load$/i.test(args[1]), { from, to });
      expect(loads).toBeGreaterThan(0);
      // Each script loaded once (one command connection), whatever the number of calls.
      const sources = new Set<string>();
      monitor.count((args) => /^script$/i.test(args[0]) && /^load$/i.test(args[1]) && (sources.add(args[2]), true), { from, to });
      expect(loads).toBe(sources.size);
      expect(monitor.count((args) => /^evalsha$/i.test(args[0]), { from, to })).toBeGreaterThan(loads);
    } finally {
      monitor.stop();
    }
  });

  it('ensureLoaded: a pipeline of EVALSHAs written after it finds the script (the watchdog\'s renewals)', async () => {
    const client = redis.client();
    await client.script('FLUSH');
    const script = LuaScript.named('lock-inspect');
    const keys = ['lock:{sl:ensure}', 'lock:{sl:ensure}:line', 'lock:{sl:ensure}:deadlines'];
    script.ensureLoaded(client, keys);
    const results = await client.pipeline().evalsha(script.sha, keys.length, ...keys, '').exec();
    expect(results?.[0]?.[0]).toBeNull();
  });

  it('after SCRIPT FLUSH, run() then tryLock() still finds the lock free, and the scripts are loaded again', async () => {
    for (let round = 0; round < 20; round++) {
      await raw.script('FLUSH');
      expect(await runThenTryLock(app, `sl:flush:${round}`)).toEqual([]);
    }
    const [known] = (await raw.script('EXISTS', LuaScript.named('reentrant-release').sha)) as number[];
    expect(known).toBe(1);
  });
});

onRedis74()('Redis 7.4: another client evicting EVAL-loaded scripts', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;

  beforeAll(async () => {
    redis = await startRedisBinary(REDIS_7_4);
    raw = redis.client();
    app = await createLockApp({ redis: redis.url });
  });

  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('600 distinct EVAL-loaded scripts by another client never evict the library\'s: run() then tryLock() finds the lock free', async () => {
    expect(await runThenTryLock(app, 'sl74:warm')).toEqual([]);
    const evictedBefore = await evictedScripts(raw);
    const busy: string[] = [];
    for (let round = 0; round < 10; round++) {
      await evalDistinctScripts(raw, 600, `r${round}`);
      busy.push(...(await runThenTryLock(app, `sl74:${round}`)));
    }
    // The other client's scripts were evicted (the server does evict), the library's were not.
    expect(await evictedScripts(raw)).toBeGreaterThanOrEqual(evictedBefore + 5_000);
    expect(busy).toEqual([]);
    // (The fair lock runs the reentrant scripts since fair-acquire.lua was folded into them.)
    const shas = ['reentrant-acquire', 'reentrant-release', 'semaphore-release'].map((name) => LuaScript.named(name).sha);
    expect(await raw.script('EXISTS', ...shas)).toEqual([1, 1, 1]);
  });

  it('a script the library loaded stays loaded when another client then runs the same source by EVAL', async () => {
    await app.get(LockService).inspect('sl74:inspected');
    const inspect = LuaScript.named('lock-inspect');
    const keys = ['lock:{sl74:other}', 'lock:{sl74:other}:line', 'lock:{sl74:other}:deadlines'];
    await raw.eval(inspect.source, keys.length, ...keys, '');
    await evalDistinctScripts(raw, 1_200, 'after-eval');
    expect(await raw.script('EXISTS', inspect.sha)).toEqual([1]);
  });
});

describeOnCluster('scripts on a Redis Cluster: loaded on each slot\'s master', () => {
  let cluster: TestRedisCluster;
  let app: TestingModule;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    app = await createLockApp({ redis: cluster.cluster() });
  });

  afterAll(async () => {
    await app?.close();
    await cluster?.stop();
  });

  it('every master gets the scripts by SCRIPT LOAD, none by EVAL; after SCRIPT FLUSH on every master run() then tryLock() finds the lock free', async () => {
    const names = (await namesOnEveryMaster(cluster, 'sl-cl', 1, (name) => `lock:{${name}}`)).map((group) => group[0]);
    const monitors = await Promise.all(cluster.masters.map((master) => CommandMonitor.start(master.client())));
    try {
      for (const name of names) expect(await runThenTryLock(app, name)).toEqual([]);
      // More names on each master (other slots): no script is loaded again there.
      for (const name of names) expect(await runThenTryLock(app, `${name}:more`)).toEqual([]);
      for (const master of cluster.masters) await master.client().script('FLUSH');
      for (const name of names) expect(await runThenTryLock(app, `${name}`)).toEqual([]);
      for (const [i, monitor] of monitors.entries()) {
        const marker = cluster.masters[i].client();
        const to = await monitor.mark(marker);
        expect(monitor.count((args) => /^eval$/i.test(args[0]), { to })).toBe(0);
        const loads = new Map<string, number>();
        monitor.count((args) => /^script$/i.test(args[0]) && /^load$/i.test(args[1]) && (loads.set(args[2], (loads.get(args[2]) ?? 0) + 1), true), { to });
        expect(loads.size).toBeGreaterThan(0);
        // Once per master before the flush and once after, whatever the number of names and slots.
        expect(Math.max(...loads.values())).toBeLessThanOrEqual(2);
      }
    } finally {
      for (const monitor of monitors) monitor.stop();
    }
  });
});
