import type { Cluster } from 'ioredis';
import type Redis from 'ioredis';

/** A connection to write and read application keys (a real server, a Cluster, or the kit's stand-in). */
export type RawClient = Redis | Cluster;

/** An application key of one Redis type, as an application would write it beside the locks. */
export interface AppKey {
  /** `string`, `number` (a string counter), `hash`, `hash with mode`, `list`, `set`, `zset`, `stream`. */
  readonly label: string;
  /** The Redis type it has (what a conflict names). */
  readonly type: 'string' | 'hash' | 'list' | 'set' | 'zset' | 'stream';
  write(raw: RawClient, key: string): Promise<unknown>;
}

/** Application keys of every Redis type: a cached value, a counter, hashes (one with a `mode` field), a list, a set, a sorted set, a stream. */
export const APP_KEYS: readonly AppKey[] = [
  { label: 'string', type: 'string', write: (raw, key) => raw.set(key, '{"order":500,"state":"cached"}') },
  { label: 'number', type: 'string', write: (raw, key) => raw.set(key, '7') },
  { label: 'hash', type: 'hash', write: (raw, key) => raw.hset(key, 'status', 'paid', 'total', '12') },
  { label: 'hash with mode', type: 'hash', write: (raw, key) => raw.hset(key, 'mode', 'read', 'owner', 'alice') },
  { label: 'list', type: 'list', write: (raw, key) => raw.rpush(key, 'a', 'b') },
  { label: 'set', type: 'set', write: (raw, key) => raw.sadd(key, 'a', 'b') },
  { label: 'zset', type: 'zset', write: (raw, key) => raw.zadd(key, 1, 'a', 2, 'b') },
  { label: 'stream', type: 'stream', write: (raw, key) => raw.xadd(key, '*', 'event', 'paid') },
];

/** The types the testing kit's in-memory Redis keeps (no sets or streams there). */
export const KIT_APP_KEYS: readonly AppKey[] = APP_KEYS.filter((key) => key.type !== 'set' && key.type !== 'stream');

/** What an application key holds now: type, value and whether it has a TTL (to prove nothing changed it). */
export async function snapshot(raw: RawClient, key: string): Promise<{ type: string; ttl: string; value: unknown }> {
  const type = (await raw.type(key)) as string;
  const pttl = await raw.pttl(key);
  const ttl = pttl === -2 ? 'gone' : pttl === -1 ? 'none' : 'some';
  let value: unknown;
  switch (type) {
    case 'string':
      value = await raw.get(key);
      break;
    case 'hash':
      value = await raw.hgetall(key);
      break;
    case 'list':
      value = await raw.lrange(key, 0, -1);
      break;
    case 'set':
      value = (await raw.smembers(key)).sort();
      break;
    case 'zset':
      value = await raw.zrange(key, 0, -1, 'WITHSCORES');
      break;
    case 'stream':
      value = await raw.xrange(key, '-', '+');
      break;
    default:
      value = undefined;
  }
  return { type, ttl, value };
}

/** Words a `LockNameConflictError` message uses for a Redis type. */
export const TYPE_WORDS: Readonly<Record<AppKey['type'], string>> = {
  string: 'a string',
  hash: 'a hash',
  list: 'a list',
  set: 'a set',
  zset: 'a sorted set',
  stream: 'a stream',
};

/**
 * Names shaped like another structure's key in Redisson's layout, around `victim`: Redisson's derived
 * keys and channels of every kind, a semaphore's leases, a reader's timeout key, and this library's
 * own records (instance records, semaphore markers, the native layout's keys under `lock:`).
 */
export function derivedKeyNames(victim: string): string[] {
  return [
    `redisson_lock_token:{${victim}}`,
    `redisson_lock_queue:{${victim}}`,
    `redisson_lock_timeout:{${victim}}`,
    `redisson_lock__channel:{${victim}}`,
    `redisson_lock__channel:{${victim}}:c0ffee00-0000-4000-8000-000000000000:7`,
    `redisson_rwlock:{${victim}}`,
    `redisson_sc:{${victim}}`,
    `redisson_unlock_latch:{${victim}}:0123456789abcdef0123456789abcdef`,
    `{${victim}}:timeout`,
    `{${victim}}:c0ffee00-0000-4000-8000-000000000000:7:rwlock_timeout:1`,
    `nestjs_redis_locks_permits:{${victim}}`,
    'lock.instance:{c0ffee00-0000-4000-8000-000000000000}',
    'lock.instances',
    `lock:{${victim}}`,
    `lock:rw:{${victim}}`,
    `lock:sem:{${victim}}`,
  ];
}
