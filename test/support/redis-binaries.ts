import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Which Redis-compatible server the tests start, so any suite runs on any server (`.ci/run`'s
 * compatibility stage sets these): `REDIS_SERVER_BIN` (default `redis-server` on PATH), and the
 * sentinel and cli from beside it unless `REDIS_SENTINEL_BIN` / `REDIS_CLI_BIN` say otherwise.
 */
export function redisServerBin(): string {
  return process.env.REDIS_SERVER_BIN || 'redis-server';
}

/** A sibling of the chosen server binary when it is a path and the sibling exists, else `name` on PATH. */
function besideServer(name: string): string {
  const server = process.env.REDIS_SERVER_BIN;
  if (server && server.includes('/')) {
    const sibling = join(dirname(server), name);
    if (existsSync(sibling)) return sibling;
  }
  return name;
}

export function redisCliBin(): string {
  return process.env.REDIS_CLI_BIN || besideServer('redis-cli');
}

/**
 * How to start a sentinel on `configFile`: `REDIS_SENTINEL_BIN` when set, else the chosen
 * `redis-server` in `--sentinel` mode (the same program as `redis-sentinel`).
 */
export function sentinelCommand(configFile: string): [string, string[]] {
  const sentinel = process.env.REDIS_SENTINEL_BIN;
  return sentinel ? [sentinel, [configFile]] : [redisServerBin(), [configFile, '--sentinel']];
}

/** The chosen server's name and version, from `redis-server --version`. */
export interface ServerBinaryVersion {
  /** `redis` or `valkey` (what the binary calls itself). */
  readonly name: string;
  readonly major: number;
  readonly minor: number;
  /** As printed, e.g. `7.0.15`. */
  readonly text: string;
}

let cached: ServerBinaryVersion | undefined;

export function redisServerVersion(): ServerBinaryVersion {
  if (cached) return cached;
  const bin = redisServerBin();
  const run = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  // "Redis server v=7.0.15 sha=..." / "Valkey server v=8.0.1 sha=..."
  const match = /^(\w+) server v=(\d+)\.(\d+)\.(\d+)/i.exec(run.stdout ?? '');
  if (!match) throw new Error(`${bin} --version printed no version (${run.error?.message ?? (run.stdout || run.stderr)})`);
  cached = { name: match[1].toLowerCase(), major: Number(match[2]), minor: Number(match[3]), text: `${match[2]}.${match[3]}.${match[4]}` };
  return cached;
}

/**
 * Redis Cluster suites need sharded pub/sub (SSUBSCRIBE/SPUBLISH, Redis 7.0+; every Valkey): on an
 * older server they are skipped, and the skip names the reason in the suite's title.
 */
export function clusterUnsupportedReason(): string | undefined {
  const { name, major, text } = redisServerVersion();
  if (name === 'redis' && major < 7) return `skipped: Redis Cluster needs sharded pub/sub (Redis 7.0+), ${redisServerBin()} is ${name} ${text}`;
  return undefined;
}
