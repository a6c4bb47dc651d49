import { ChildProcess } from 'node:child_process';
import type { TestingModule } from '@nestjs/testing';
import Redis, { Cluster } from 'ioredis';
import { LockService } from '../../lib';
import { printed, spawnFixture } from '../support/child-process';
import { createLockApp } from '../support/lock-app';
import { redisServerBin } from '../support/redis-binaries';
import { shardSubscribers, startRedisCluster, TestRedisCluster } from '../support/redis-cluster';
import { startRedisBinary, TestRedis } from '../support/redis-server';
import { RedissonProcess } from './redisson';

/**
 * Plumbing of the cross-language scenarios (test/interop/DESIGN-redisson-layout.md §8): the Redis
 * they run on, Node lock modules of either layout, a Node holder in a child process, and the error a
 * scenario throws from an explicit check. A scenario passes on `layout: 'redisson'` and must throw a
 * `ScenarioViolation` of a known code on `layout: 'native'` (proof that it can see a wrong layout).
 */

export type Layout = 'redisson' | 'native';

/** Who takes the lock first: the other language waits, or is refused. */
export type Direction = 'java-holds' | 'node-holds';
export const DIRECTIONS: readonly Direction[] = ['java-holds', 'node-holds'];

/** A scenario's explicit check failed: `code` says which (`not-excluded`, `lost-update`, ...). */
export class ScenarioViolation extends Error {
  constructor(
    readonly code: string,
    detail: string,
  ) {
    super(`${code}: ${detail}`);
    this.name = 'ScenarioViolation';
  }
}

/** Throws `ScenarioViolation(code)` unless `condition` holds. */
export function check(condition: boolean, code: string, detail: () => string): asserts condition {
  if (!condition) throw new ScenarioViolation(code, detail());
}

/** Node lock modules on the scenario's Redis. */
export interface NodeLocks {
  readonly app: TestingModule;
  readonly locks: LockService;
  close(): Promise<void>;
}

export interface NodeLocksOptions {
  readonly layout: Layout;
  readonly redis: string | Cluster;
  readonly watchdogTimeout: number;
  /** Redisson layout only: `redisson.fencedLocks` (Java uses `getFencedLock`). */
  readonly fencedLocks?: boolean;
}

/** A Nest application context with `LockModule.forRoot(...)` of the given layout, as a user builds one. */
export async function nodeLocks({ layout, redis, watchdogTimeout, fencedLocks }: NodeLocksOptions): Promise<NodeLocks> {
  const app = await createLockApp(
    layout === 'redisson'
      ? { redis, watchdogTimeout, layout, redisson: fencedLocks ? { fencedLocks } : {} }
      : { redis, watchdogTimeout, layout },
  );
  return {
    app,
    locks: app.get(LockService),
    async close() {
      await app.close();
      if (typeof redis !== 'string') redis.disconnect(); // a client passed in is never closed by the module
    },
  };
}

/** The Redis a scenario runs on, as each side connects to it. */
export interface ScenarioRedis {
  readonly kind: 'standalone' | 'cluster';
  /** A plain client for the scenario's own reads (HGET, PTTL, GET). */
  readonly raw: Redis | Cluster;
  /** What `LockModule.forRoot({ redis })` gets: a URL, or a new ioredis Cluster client. */
  nodeConnection(): string | Cluster;
  /** `RedissonProcess.start`'s connection options. */
  readonly java: { readonly address: string } | { readonly cluster: readonly string[] };
  /** The holder fixture's target argument: a URL, or `cluster:` and the masters' URLs. */
  readonly childTarget: string;
  /** Clients subscribed to `channel`, sharded or not, wherever they are. */
  listeners(channel: string): Promise<number>;
  stop(): Promise<void>;
}

export async function standaloneRedis(): Promise<ScenarioRedis> {
  const redis: TestRedis = await startRedisBinary(redisServerBin());
  const raw = redis.client();
  return {
    kind: 'standalone',
    raw,
    nodeConnection: () => redis.url,
    java: { address: redis.url },
    childTarget: redis.url,
    async listeners(channel) {
      const [, count] = (await raw.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
      return Number(count);
    },
    stop: () => redis.stop(),
  };
}

export async function clusterRedis(): Promise<ScenarioRedis> {
  const cluster: TestRedisCluster = await startRedisCluster(3);
  const raw = cluster.cluster();
  const urls = cluster.masters.map((m) => m.url);
  return {
    kind: 'cluster',
    raw,
    nodeConnection: () => cluster.cluster(),
    java: { cluster: urls },
    childTarget: `cluster:${urls.join(',')}`,
    async listeners(channel) {
      // A sharded subscriber is on the channel's master; a plain one may be on any master.
      let count = await shardSubscribers(await cluster.masterOf(channel), channel);
      for (const master of cluster.masters) {
        const client = master.client();
        const [, plain] = (await client.call('PUBSUB', 'NUMSUB', channel)) as [string, number];
        client.disconnect();
        count += Number(plain);
      }
      return count;
    },
    async stop() {
      raw.disconnect();
      await cluster.stop();
    },
  };
}

/** A JVM of `version` on the scenario's Redis. */
export function startJava(redis: ScenarioRedis, version: string, watchdogMs: number): Promise<RedissonProcess> {
  return RedissonProcess.start({ version, ...redis.java, watchdogMs });
}

/** A Node process holding one lock (test/fixtures/redisson-layout-holder.ts), to be SIGKILLed. */
export interface NodeHolderChild {
  readonly child: ChildProcess;
  /** SIGKILL; resolves once the process is gone. */
  kill(): Promise<void>;
}

/** Spawns the holder and resolves once it holds `name` (it printed `held`). */
export async function nodeHolderChild(redis: ScenarioRedis, layout: Layout, name: string, watchdogMs: number): Promise<NodeHolderChild> {
  const child = spawnFixture('redisson-layout-holder', [layout, redis.childTarget, name, String(watchdogMs)]);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr += d));
  try {
    await printed(child, 'held');
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${stderr}`);
  }
  return {
    child,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Both directions at once; resolves when both pass, else rejects with the first failure (each one settled first). */
export async function bothWays(run: (direction: Direction) => Promise<void>): Promise<void> {
  const results = await Promise.allSettled(DIRECTIONS.map(run));
  const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
  if (failures.length === 0) return;
  // Every direction must fail the same way: a violation in one and a pass in the other is a defect too.
  if (failures.length < results.length) {
    const passed = DIRECTIONS.filter((_, i) => results[i].status === 'fulfilled');
    const first = failures[0];
    if (first instanceof ScenarioViolation) throw new ScenarioViolation(`${first.code}-one-way`, `${first.message}; passed: ${passed.join(', ')}`);
  }
  throw failures[0];
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
