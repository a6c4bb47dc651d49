import { INVALID_OPTION, UNKNOWN_OPTION } from './lock.messages';
import { REDISSON_DEADLOCK_CHECK, REDISSON_MAPPER_RESULT, REDISSON_MAPPER_THREW, REDISSON_WITHOUT_LAYOUT } from './messages/redisson.messages';

/** Redisson's `NameMapper` as an object (the Java side's `map`). */
export interface RedissonNameMapper {
  /** Lock name -> Redis key, as the Java side's `NameMapper.map` does. */
  map(name: string): string;
}

/**
 * How the Java services' Redisson names and wakes locks, mirrored here (docs/redisson-interop.md).
 * Only with `layout: 'redisson'`.
 */
export interface RedissonLayoutOptions {
  /**
   * The Java side's `Config.setNameMapper`: lock name -> Redis key. Default: the name itself
   * (Redisson's `NameMapper.direct()`). It must return the same non-empty string every time.
   */
  nameMapper?: ((name: string) => string) | RedissonNameMapper;
  /**
   * The Java side's `shardedSubscriptionMode` (cluster mode only): `'auto'` (Redisson's default:
   * sharded pub/sub when every master answers `PUBSUB SHARDNUMSUB`, i.e. Redis/Valkey 7.0+),
   * `'on'` or `'off'`. Outside a cluster Redisson always uses PUBLISH/SUBSCRIBE. Default `'auto'`.
   */
  shardedSubscription?: 'auto' | 'on' | 'off';
  /**
   * The Java side locks these names with `RFencedLock` (`getFencedLock`): every acquisition of a
   * `LockService` lock increments `redisson_lock_token:{name}`, the token Java reads, and that
   * is the hold's fencing token. Default false (Redisson's `RLock`: no tokens in this layout).
   */
  fencedLocks?: boolean;
}

/** The Redisson layout's settings, checked. */
export interface ResolvedRedissonOptions {
  readonly nameMapper: (name: string) => string;
  /** Whether the module was given a `nameMapper` (else names are keys as they are: templates need a constant prefix). */
  readonly mapsNames: boolean;
  readonly shardedSubscription: 'auto' | 'on' | 'off';
  readonly fencedLocks: boolean;
}

export type LockLayoutName = 'native' | 'redisson';

const REDISSON_OPTIONS = ['nameMapper', 'shardedSubscription', 'fencedLocks'] as const;

/** The name the mapper is tried on at start (a mapper that throws or varies fails the start). */
export const MAPPER_PROBE_NAME = 'nestjs-redis-locks:probe';

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;

/** `layout` and `redisson`, checked together (E1-E6, E10 of docs/redisson-interop.md#start-up-errors). */
export function resolveLayout(
  layoutOption: unknown,
  redissonOption: unknown,
  deadlockCheckAfter: unknown,
): { layout: LockLayoutName; redisson: ResolvedRedissonOptions | undefined } {
  const layout = layoutOption ?? 'native';
  if (layout !== 'native' && layout !== 'redisson') {
    throw new Error(INVALID_OPTION('layout', "'native' or 'redisson'", layout));
  }
  if (layout === 'native') {
    if (redissonOption !== undefined) throw new Error(REDISSON_WITHOUT_LAYOUT);
    return { layout, redisson: undefined };
  }
  if (deadlockCheckAfter !== undefined && deadlockCheckAfter !== 0) throw new Error(REDISSON_DEADLOCK_CHECK(deadlockCheckAfter));
  const raw = redissonOption ?? {};
  if (!isPlainObject(raw)) throw new Error(INVALID_OPTION('redisson', 'an object', raw));
  for (const key of Object.keys(raw)) {
    if (!(REDISSON_OPTIONS as readonly string[]).includes(key)) throw new Error(UNKNOWN_OPTION(`redisson.${key}`, REDISSON_OPTIONS));
  }
  const sharded = raw.shardedSubscription ?? 'auto';
  if (sharded !== 'auto' && sharded !== 'on' && sharded !== 'off') {
    throw new Error(INVALID_OPTION('redisson.shardedSubscription', "'auto', 'on' or 'off'", sharded));
  }
  const fenced = raw.fencedLocks ?? false;
  if (typeof fenced !== 'boolean') throw new Error(INVALID_OPTION('redisson.fencedLocks', 'a boolean', fenced));
  return {
    layout,
    redisson: { nameMapper: checkMapper(raw.nameMapper), mapsNames: raw.nameMapper !== undefined, shardedSubscription: sharded, fencedLocks: fenced },
  };
}

/** The mapper as a function, tried once on a probe name: a mapper that throws or varies fails the start. */
function checkMapper(value: unknown): (name: string) => string {
  if (value === undefined) return (name) => name;
  let map: (name: string) => string;
  if (typeof value === 'function') map = value as (name: string) => string;
  else if (isPlainObject(value) && typeof value.map === 'function') {
    const mapper = value as { map(name: string): string };
    map = (name) => mapper.map(name);
  } else {
    throw new Error(INVALID_OPTION('redisson.nameMapper', 'a function (name) => string or an object with map(name)', value));
  }
  let first: unknown;
  let second: unknown;
  try {
    first = map(MAPPER_PROBE_NAME);
    second = map(MAPPER_PROBE_NAME);
  } catch (error) {
    throw new Error(REDISSON_MAPPER_THREW(MAPPER_PROBE_NAME, error instanceof Error ? error.message : String(error)));
  }
  if (typeof first !== 'string' || first === '' || first !== second) throw new Error(REDISSON_MAPPER_RESULT(MAPPER_PROBE_NAME, first, second));
  return map;
}
