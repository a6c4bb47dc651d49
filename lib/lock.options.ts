import Redis, { Cluster, RedisOptions } from 'ioredis';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { INVALID_OPTION, UNKNOWN_OPTION } from './lock.messages';
import { resolveLayout, type LockLayoutName, type RedissonLayoutOptions, type ResolvedRedissonOptions } from './layout.options';

/** An ioredis client the user owns (never closed by the library), a URL, or ioredis options. */
export type RedisConnectionOption = Redis | Cluster | RedisOptions | string;

/** The `redlock` option: the independent masters of `LockService.getRedLock` (RedLock). */
export interface RedLockOptions {
  /** Independent Redis masters (not replicas of each other, not one cluster). */
  clients: RedisConnectionOption[];
  /**
   * How long one master may take to answer one command (ms) before it counts as a "no" for that
   * attempt, so a dead or frozen master cannot stall the others. Default: a tenth of the lease,
   * between 100 and 500 ms.
   */
  masterTimeout?: number;
}

/** The options of `LockModule.forRoot()` (and what `forRootAsync`'s `useFactory` returns); every one is optional. */
export interface LockModuleOptions {
  /** Default `redis://127.0.0.1:6379`. A client passed in is used as is and never closed. */
  redis?: RedisConnectionOption;
  /** Prefix of every Redis key. Default `'lock:'`. */
  keyPrefix?: string;
  /** Lease of a lock taken without `leaseTime`, renewed every third of it. Default 30000 ms. */
  watchdogTimeout?: number;
  /** `waitTime` of `run` and the decorators when none is given. Default 5000 ms. */
  defaultWaitTime?: number;
  /**
   * How long a fair-lock waiter stays in line without a heartbeat. Default 5000 ms. With
   * `layout: 'redisson'` it is Redisson's `fairLockWaitTimeout` (a queued waiter's deadline, fixed
   * when it joins, used when the call has no positive `waitTime`): default 300 000 ms, as Java's.
   */
  fairLockWaiterTimeout?: number;
  /** Masters for `LockService.getRedLock`. */
  redlock?: RedLockOptions;
  /**
   * After each acquisition, wait (Redis `WAIT`) until this many replicas have the lock, so a
   * failover is less likely to lose it. Costs a replication round trip per acquisition, and blocks
   * the command connection up to `syncReplicasTimeout` when replicas lag. When fewer replicas
   * confirm in time the lock is released again and the acquisition fails with a `LockError`.
   * Default 0 (off).
   */
  syncReplicas?: number;
  /** Upper bound of the `WAIT` of `syncReplicas`, in ms. Default 1000. */
  syncReplicasTimeout?: number;
  /**
   * The longest the library waits for any one answer from Redis, in ms. Default 3000. An
   * acquisition settles by its `waitTime` plus at most this; `unlock`, `forceUnlock`, the state
   * queries and shutdown by this. Enforced by the library itself, whatever the client's settings.
   */
  commandTimeout?: number;
  /**
   * How long application shutdown waits for bodies running under a lock, in ms. Default 10000.
   * Shutdown first aborts their `signal` with `LockShutdownError`, keeps their locks renewed while
   * they finish, and releases what is still held after this time.
   */
  shutdownTimeout?: number;
  /**
   * This module instance's name in `inspect` and `list` (with its host, pid and start time).
   * Default: the `name` of the package.json in the working directory, else `host:pid`.
   */
  clientName?: string;
  /**
   * Adds the concrete lock name (`lock.name`) to every metric and span attribute set. Off by
   * default: names such as `order:42` make one time series per order (cardinality).
   */
  telemetryLockNames?: boolean;
  /**
   * Longest lock name accepted, in characters (UTF-16 code units, as `string.length` counts).
   * Default 1024. A longer name is refused with `LockNameTooLongError` (a key template value:
   * `KeyTemplateError`, 400 in HTTP): a name is often a request value, and each name costs Redis
   * memory for a while after its release (see docs/decorators-and-key-templates.md#lock-names-from-requests-limits-and-refusals).
   */
  maxNameLength?: number;
  /**
   * How long a wait lasts before it is checked for a deadlock across processes, in ms. Default
   * 1000; 0 turns the cross-process check off. Waits of a call chain that holds locks then keep a
   * wait-for record in Redis, and a wait that closes a cycle is refused with `LockDeadlockError`.
   * Cycles within one process are refused at once whatever this says (docs/deadlocks.md).
   */
  deadlockCheckAfter?: number;
  /**
   * Where locks live in Redis: `'native'` (default: this library's keys, docs/architecture.md) or
   * `'redisson'`: exactly the keys, fields, channels and messages of Java Redisson, so a Java service's
   * `RLock` (and fair, read-write locks, semaphores) and this module's locks of one name exclude each
   * other and wake each other (docs/redisson-interop.md).
   */
  layout?: LockLayoutName;
  /** The Java side's Redisson settings to mirror; only with `layout: 'redisson'`. */
  redisson?: RedissonLayoutOptions;
  /**
   * Register the module globally (default `true`, as `ScheduleModule.forRoot` and `BullModule.forRoot`
   * are): its services are injectable in every module of the app. `false`: only in modules that
   * import it.
   */
  isGlobal?: boolean;
}

export interface ResolvedLockOptions {
  readonly redis: RedisConnectionOption;
  readonly keyPrefix: string;
  readonly watchdogTimeout: number;
  readonly defaultWaitTime: number;
  readonly fairLockWaiterTimeout: number;
  readonly redlock: RedLockOptions | undefined;
  readonly syncReplicas: number;
  readonly syncReplicasTimeout: number;
  readonly commandTimeout: number;
  readonly shutdownTimeout: number;
  readonly clientName: string;
  readonly telemetryLockNames: boolean;
  readonly maxNameLength: number;
  readonly deadlockCheckAfter: number;
  readonly layout: LockLayoutName;
  readonly redisson: ResolvedRedissonOptions | undefined;
}

export const LOCK_OPTION_DEFAULTS = {
  redis: 'redis://127.0.0.1:6379',
  keyPrefix: 'lock:',
  watchdogTimeout: 30_000,
  defaultWaitTime: 5_000,
  fairLockWaiterTimeout: 5_000,
  syncReplicas: 0,
  syncReplicasTimeout: 1_000,
  commandTimeout: 3_000,
  shutdownTimeout: 10_000,
  maxNameLength: 1_024,
  deadlockCheckAfter: 1_000,
} as const;

/** Java Redisson's `Config.fairLockWaitTimeout` default: `fairLockWaiterTimeout` in the Redisson layout. */
export const REDISSON_FAIR_LOCK_WAIT_TIMEOUT = 300_000;

const KNOWN_OPTIONS = [
  'redis',
  'keyPrefix',
  'watchdogTimeout',
  'defaultWaitTime',
  'fairLockWaiterTimeout',
  'redlock',
  'syncReplicas',
  'syncReplicasTimeout',
  'commandTimeout',
  'shutdownTimeout',
  'clientName',
  'telemetryLockNames',
  'maxNameLength',
  'deadlockCheckAfter',
  'layout',
  'redisson',
  'isGlobal',
] as const;

/** The default `clientName`: the app's package name (package.json in the working directory), else `host:pid`. */
export function defaultClientName(): string {
  try {
    const { name } = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as { name?: unknown };
    if (typeof name === 'string' && name.length > 0) return name;
  } catch {
    // no readable package.json: fall back to the host and pid
  }
  return `${hostname()}:${process.pid}`;
}

/** The watchdog renews every third of the lease: below this it would spin. */
const MIN_WATCHDOG_TIMEOUT = 30;

export function isRedisClient(value: unknown): value is Redis | Cluster {
  return value instanceof Redis || value instanceof Cluster;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

function checkRedis(option: string, value: unknown): RedisConnectionOption {
  if (isRedisClient(value) || isPlainObject(value)) return value as RedisConnectionOption;
  if (typeof value === 'string' && /^(rediss?|unix):\/\/\S+$/.test(value)) return value;
  throw new Error(
    INVALID_OPTION(option, 'an ioredis Redis/Cluster instance, ioredis options or a redis:// URL', value),
  );
}

/**
 * A duration option: whole milliseconds (Redis takes nothing else; a fraction is refused here, at
 * bootstrap, rather than rounded, since an option is written once and a fraction is a slip).
 */
function checkMs(option: string, value: unknown, min: number): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= min) return value;
  throw new Error(INVALID_OPTION(option, `a whole number of milliseconds >= ${min}`, value));
}

function checkWholeNumber(option: string, value: unknown, min: number): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= min) return value;
  throw new Error(INVALID_OPTION(option, `a whole number >= ${min}`, value));
}

function checkCount(option: string, value: unknown): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return value;
  throw new Error(INVALID_OPTION(option, 'a whole number >= 0', value));
}

/** RedLock needs independent masters: a cluster is one system, and a master listed twice votes twice. */
function checkRedLock(value: unknown): RedLockOptions {
  const clients = isPlainObject(value) ? value.clients : undefined;
  if (!isPlainObject(value) || !Array.isArray(clients) || clients.length === 0) {
    throw new Error(INVALID_OPTION('redlock', '{ clients: [...] } with at least one Redis master', value));
  }
  for (const key of Object.keys(value)) {
    if (key !== 'clients' && key !== 'masterTimeout') {
      throw new Error(UNKNOWN_OPTION(`redlock.${key}`, ['clients', 'masterTimeout']));
    }
  }
  const checked = clients.map((client, i) => {
    const option = `redlock.clients[${i}]`;
    if (client instanceof Cluster) {
      const expected = 'a standalone Redis master (a Cluster is one system, not an independent master)';
      throw new Error(INVALID_OPTION(option, expected, 'a Cluster instance'));
    }
    const first = clients.findIndex((other) => other === client);
    if (first !== i) {
      throw new Error(INVALID_OPTION(option, `a master not listed before (it repeats redlock.clients[${first}])`, client));
    }
    return checkRedis(option, client);
  });
  const masterTimeout = value.masterTimeout === undefined ? undefined : checkMs('redlock.masterTimeout', value.masterTimeout, 1);
  return masterTimeout === undefined ? { clients: checked } : { clients: checked, masterTimeout };
}

/** Validates the module options and fills in defaults; throws an error naming the first bad option. */
export function resolveLockOptions(options: LockModuleOptions | undefined): ResolvedLockOptions {
  const raw: Record<string, unknown> = { ...(options ?? {}) };
  if (options !== undefined && !isPlainObject(options) && typeof options !== 'object') {
    throw new Error(INVALID_OPTION('options', 'an object', options));
  }
  for (const key of Object.keys(raw)) {
    if (!(KNOWN_OPTIONS as readonly string[]).includes(key)) throw new Error(UNKNOWN_OPTION(key, KNOWN_OPTIONS));
  }
  const pick = <K extends keyof typeof LOCK_OPTION_DEFAULTS>(key: K): unknown =>
    raw[key] === undefined ? LOCK_OPTION_DEFAULTS[key] : raw[key];

  const keyPrefix = pick('keyPrefix');
  if (typeof keyPrefix !== 'string') throw new Error(INVALID_OPTION('keyPrefix', 'a string', keyPrefix));

  const redlock = raw.redlock === undefined ? undefined : checkRedLock(raw.redlock);
  if (raw.isGlobal !== undefined && typeof raw.isGlobal !== 'boolean') {
    throw new Error(INVALID_OPTION('isGlobal', 'a boolean', raw.isGlobal));
  }
  if (raw.clientName !== undefined && (typeof raw.clientName !== 'string' || raw.clientName.trim() === '')) {
    throw new Error(INVALID_OPTION('clientName', 'a non-empty string', raw.clientName));
  }
  if (raw.telemetryLockNames !== undefined && typeof raw.telemetryLockNames !== 'boolean') {
    throw new Error(INVALID_OPTION('telemetryLockNames', 'a boolean', raw.telemetryLockNames));
  }

  const { layout, redisson } = resolveLayout(raw.layout, raw.redisson, raw.deadlockCheckAfter);

  return {
    redis: checkRedis('redis', pick('redis')),
    keyPrefix,
    watchdogTimeout: checkMs('watchdogTimeout', pick('watchdogTimeout'), MIN_WATCHDOG_TIMEOUT),
    defaultWaitTime: checkMs('defaultWaitTime', pick('defaultWaitTime'), 0),
    // In the Redisson layout it is Java's fairLockWaitTimeout, whose default is 300 s (docs/redisson-interop.md#fair-lock).
    fairLockWaiterTimeout: checkMs(
      'fairLockWaiterTimeout',
      raw.fairLockWaiterTimeout === undefined && layout === 'redisson' ? REDISSON_FAIR_LOCK_WAIT_TIMEOUT : pick('fairLockWaiterTimeout'),
      MIN_WATCHDOG_TIMEOUT,
    ),
    redlock,
    syncReplicas: checkCount('syncReplicas', pick('syncReplicas')),
    syncReplicasTimeout: checkMs('syncReplicasTimeout', pick('syncReplicasTimeout'), 1),
    commandTimeout: checkMs('commandTimeout', pick('commandTimeout'), 1),
    shutdownTimeout: checkMs('shutdownTimeout', pick('shutdownTimeout'), 0),
    clientName: (raw.clientName as string | undefined) ?? defaultClientName(),
    telemetryLockNames: (raw.telemetryLockNames as boolean | undefined) ?? false,
    maxNameLength: checkWholeNumber('maxNameLength', pick('maxNameLength'), 1),
    // Cross-process detection reads wait-for records Java holders never write: off in the Redisson layout.
    deadlockCheckAfter: layout === 'redisson' ? 0 : checkMs('deadlockCheckAfter', pick('deadlockCheckAfter'), 0),
    layout,
    redisson,
  };
}
