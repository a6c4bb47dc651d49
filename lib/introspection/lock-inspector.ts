import { LockKeys } from '../redis/lock-keys';
import { escapeRedisGlob } from '../redis/redis-glob';
import { SemaphoreKeys } from '../semaphores/semaphore-keys';
import { NameGlob } from './name-glob';
import { INSTANCES_BAD_COUNT, LIST_BAD_COUNT } from '../lock.messages';
import { LuaScript } from '../redis/lua-script';
import { isCluster, type RedisClient } from '../redis/redis-client';
import { InstanceAttribution, pairs, withInstance } from './instance-attribution';
import { RedissonInspector } from './redisson-inspector';
import type { InspectionSource } from './inspection-source';
import type {
  ListLocksOptions,
  LiveInstanceInfo,
  LiveInstances,
  LiveInstancesOptions,
  LockHolderInfo,
  LockInfo,
  LockWaiterInfo,
} from './lock-info';
import { heldSinceOfToken, recordedHeldSince } from '../held-since';

const scripts = {
  lock: LuaScript.named('lock-inspect'),
  readWrite: LuaScript.named('rw-inspect'),
  semaphore: LuaScript.named('semaphore-inspect'),
  liveInstances: LuaScript.named('instance-list'),
};

const DEFAULT_SCAN_COUNT = 100;
/** SCAN's COUNT is work Redis does in one command, blocking every other client meanwhile: bounded. */
const MAX_SCAN_COUNT = 10_000;
const DEFAULT_INSTANCE_COUNT = 100;
/** Instances listed per call: each may cost one HGETALL in the script (or one lookup on a cluster). */
const MAX_INSTANCE_COUNT = 1_000;

/** How much of a waiting line an inspection lists (the lock board's: docs/lock-board.md#cost). */
export interface InspectOptions {
  /**
   * The most waiters to list, first in line first (a positive integer): the script then looks at a
   * bounded part of the line however long it is, and the record's `waiterCount` says how many wait
   * in all. Default: every waiter, and no `waiterCount` (what `inspect()` and `list()` report).
   */
  readonly waiterLimit?: number;
}

/** The script argument for `waiterLimit` (none when every waiter is wanted), checked. */
function waiterLimitArgs(options: InspectOptions): number[] {
  const limit = options.waiterLimit;
  if (limit === undefined) return [];
  if (!Number.isSafeInteger(limit) || limit < 1) throw new TypeError(`waiterLimit must be a positive integer (got ${String(limit)})`);
  return [limit];
}

/**
 * `inspect` and `list` (docs/architecture.md#introspection): one script call per lock reads its holders, counts, modes,
 * lease, fencing token and fair line, and (on a standalone server or Sentinel) the holders'
 * instance identities too; on a cluster, whose instance keys live in other slots, unknown
 * identities cost one more lookup.
 */
export class LockInspector {
  private readonly attribution: InstanceAttribution;
  /** Layout 'redisson': every lock read goes to Redisson's keys instead. */
  private readonly redisson: RedissonInspector | undefined;

  constructor(private readonly engine: InspectionSource) {
    this.attribution = new InstanceAttribution(engine);
    this.redisson = engine.redisson && new RedissonInspector(engine, engine.redisson, this.attribution);
  }

  /** Layout 'redisson': the lock board walks every hash and asks `inspectKey` what each one is. */
  get redissonLayout(): boolean {
    return this.redisson !== undefined;
  }

  /** Layout 'redisson': whatever lock the Redis key holds (under the key's name), or undefined. */
  inspectKey(key: string, options: InspectOptions = {}): Promise<LockInfo | undefined> {
    if (!this.redisson) return Promise.resolve(undefined);
    return this.redisson.inspectKey(key, waiterLimitArgs(options));
  }

  /**
   * A reentrant or fair lock (they share the hash); `kind` is what the asking service calls it.
   * `options.waiterLimit` lists at most that many waiters, with `waiterCount` (the lock board).
   */
  async inspectLock(name: string, kind: 'reentrant' | 'fair', options: InspectOptions = {}): Promise<LockInfo> {
    const lineLimit = waiterLimitArgs(options);
    if (this.redisson) return this.redisson.inspectLock(name, kind, lineLimit);
    const lockKey = this.engine.keys.lock(name);
    const keys = [lockKey, LockKeys.line(lockKey), LockKeys.lineDeadlines(lockKey)];
    const reply = (await this.engine.call(name, (ticket) =>
      scripts.lock.run(this.engine.client, keys, [this.attribution.scriptPrefix(), ...lineLimit], ticket),
    )) as [number, string | null, string[], string[], unknown[], number, number];
    const [ttl, fence, holderFields, lineEntries, instanceFields] = reply;
    const serverTime = Number(reply[5]);
    const waiterCount = lineLimit.length > 0 ? { waiterCount: Number(reply[6] ?? 0) } : undefined;
    // A line entry is '<owner id> <request id> <lease> <p|f>' (an older version's: the owner id alone).
    const waiterIds = lineEntries.map((entry) => entry.split(' ')[0]);
    const fairWaiters = lineEntries.some((entry) => !entry.includes(' ') || entry.endsWith(' f'));
    const instances = await this.attribution.of(instanceFields, [...pairs(holderFields).map(([owner]) => owner), ...waiterIds], name);
    // One hold at a time: it began when its fencing token was taken (nothing else is stored for it).
    const heldSince = heldSinceOfToken(fence == null ? undefined : Number(fence), serverTime);
    const holders: LockHolderInfo[] = pairs(holderFields).map(([ownerId, count]) =>
      withInstance({ ownerId, holdCount: Number(count), ...(heldSince === undefined ? {} : { heldSince }) }, instances),
    );
    const locked = holders.length > 0 && Number(ttl) !== -2;
    const info: LockInfo = {
      name,
      kind: kind === 'reentrant' && fairWaiters ? 'fair' : kind,
      locked,
      ttl: Number(ttl),
      ...(locked && fence != null ? { fencingToken: Number(fence) } : {}),
      holders,
      serverTime,
    };
    if (kind === 'fair' || waiterIds.length > 0 || (waiterCount?.waiterCount ?? 0) > 0) {
      return { ...info, waiters: waiterIds.map((ownerId): LockWaiterInfo => withInstance({ ownerId }, instances)), ...waiterCount };
    }
    return info;
  }

  /** A read-write lock; `options.waiterLimit` as for `inspectLock`. */
  async inspectReadWrite(name: string, options: InspectOptions = {}): Promise<LockInfo> {
    const lineLimit = waiterLimitArgs(options);
    if (this.redisson) return this.redisson.inspectReadWrite(name, lineLimit);
    const rwKey = this.engine.keys.readWrite(name);
    const keys = [rwKey, LockKeys.readWriteLeases(rwKey), LockKeys.line(rwKey), LockKeys.lineDeadlines(rwKey)];
    const reply = (await this.engine.call(name, (ticket) =>
      scripts.readWrite.run(this.engine.client, keys, [this.attribution.scriptPrefix(), ...lineLimit], ticket),
    )) as [number, string | null, string | null, string[], unknown[], string[] | undefined, number, number];
    const [ttl, mode, fence, holderFields, instanceFields, lineEntries = []] = reply;
    const serverTime = Number(reply[6]);
    const waiterCount = lineLimit.length > 0 ? Number(reply[7] ?? 0) : undefined;
    // { owner id, hold count, mode, held since ('' for the writer: read from its token) }
    const quads: Array<[string, string, string, string]> = [];
    for (let i = 0; i + 3 < holderFields.length; i += 4) quads.push([holderFields[i], holderFields[i + 1], holderFields[i + 2], holderFields[i + 3]]);
    // A line entry is '<owner id> <request id> <lease> <r|w>'.
    const waiterIds = lineEntries.map((entry) => entry.split(' ')[0]);
    const instances = await this.attribution.of(instanceFields, [...quads.map(([owner]) => owner), ...waiterIds], name);
    const writeHeldSince = heldSinceOfToken(fence == null ? undefined : Number(fence), serverTime);
    const holders = quads.map(([ownerId, count, holdMode, since]) => {
      const heldSince = holdMode === 'write' ? writeHeldSince : recordedHeldSince(since);
      return withInstance(
        { ownerId, holdCount: Number(count), mode: holdMode as 'read' | 'write', ...(heldSince === undefined ? {} : { heldSince }) },
        instances,
      );
    });
    const locked = holders.length > 0 && Number(ttl) !== -2;
    return {
      name,
      kind: 'read-write',
      locked,
      ttl: Number(ttl),
      ...(locked && mode ? { mode: mode as 'read' | 'write' } : {}),
      ...(locked && fence != null ? { fencingToken: Number(fence) } : {}),
      holders,
      // Only while someone waits (the line exists only then), as for a reentrant lock.
      ...(waiterIds.length > 0 || (waiterCount ?? 0) > 0
        ? { waiters: waiterIds.map((ownerId): LockWaiterInfo => withInstance({ ownerId }, instances)) }
        : {}),
      ...(waiterCount === undefined ? {} : { waiterCount }),
      serverTime,
    };
  }

  /**
   * A semaphore as `list` reports it: its limit, free permits, holders (permits taken) and line;
   * `options.waiterLimit` as for `inspectLock`.
   */
  async inspectSemaphore(name: string, options: InspectOptions = {}): Promise<LockInfo> {
    const keys = new SemaphoreKeys(this.engine.keys, name);
    const lineLimit = waiterLimitArgs(options);
    const reply = (await this.engine.call(name, (ticket) =>
      scripts.semaphore.run(this.engine.client, [keys.base, keys.leases, keys.line, keys.deadlines], [1, ...lineLimit], ticket),
    )) as [number, number, unknown[], unknown[], number, number];
    const [limit, used, holderFields, waiterFields] = [Number(reply[0]), Number(reply[1]), reply[2] ?? [], reply[3] ?? []];
    const serverTime = Number(reply[4]);
    const waiterCount = lineLimit.length > 0 ? { waiterCount: Number(reply[5] ?? 0) } : {};
    const held: Array<{ ownerId: string; holdCount: number; ttl: number; fencingToken: number }> = [];
    for (let i = 0; i + 3 < holderFields.length; i += 4) {
      held.push({ ownerId: String(holderFields[i]), holdCount: Number(holderFields[i + 1]), ttl: Number(holderFields[i + 2]), fencingToken: Number(holderFields[i + 3]) });
    }
    const waiting: Array<{ ownerId: string; permits: number }> = [];
    for (let i = 0; i + 1 < waiterFields.length; i += 2) waiting.push({ ownerId: String(waiterFields[i]), permits: Number(waiterFields[i + 1]) });
    const instances = await this.attribution.of([], [...held.map((h) => h.ownerId), ...waiting.map((w) => w.ownerId)], name, true);
    return {
      name,
      kind: 'semaphore',
      locked: held.length > 0,
      ttl: held.length > 0 ? Math.max(...held.map((h) => h.ttl)) : -2,
      holders: held.map(({ ownerId, holdCount, fencingToken }) => {
        const heldSince = heldSinceOfToken(fencingToken, serverTime);
        return withInstance({ ownerId, holdCount, fencingToken, ...(heldSince === undefined ? {} : { heldSince }) }, instances);
      }),
      waiters: waiting.map((waiter): LockWaiterInfo => withInstance(waiter, instances)),
      ...waiterCount,
      ...(limit > 0 ? { permits: limit, available: Math.max(0, limit - used) } : {}),
      serverTime,
    };
  }

  /**
   * Every lock and semaphore that exists (SCAN over every master of a cluster, `count` keys per
   * round trip, each bounded by `commandTimeout`), each reported as its own kind under its own
   * name and inspected one by one; one that ended meanwhile is skipped. Redis is only given the
   * key prefix to match (cheap for it); `match` is a `NameGlob` applied here to decoded names.
   */
  async *list(options: ListLocksOptions = {}): AsyncGenerator<LockInfo> {
    const { keyPrefix, maxNameLength } = this.engine.options;
    const count = options.count ?? DEFAULT_SCAN_COUNT;
    // Checked before the first round trip: a refused pattern or count costs Redis nothing.
    if (!Number.isInteger(count) || count < 1 || count > MAX_SCAN_COUNT) throw new TypeError(LIST_BAD_COUNT(count, MAX_SCAN_COUNT));
    const glob = options.match === undefined ? undefined : NameGlob.parse(options.match, 2 * maxNameLength);
    if (this.redisson) {
      yield* this.redisson.list(this.masters(), count, glob);
      return;
    }
    const pattern = `${escapeRedisGlob(keyPrefix)}*`;
    for (const node of this.masters()) {
      let cursor = '0';
      do {
        const [next, keys] = (await this.engine.call('list', () =>
          node.scan(cursor, 'MATCH', pattern, 'COUNT', count, 'TYPE', 'hash'),
        )) as [string, string[]];
        cursor = next;
        for (const key of keys) {
          // Only keys that are this library's main keys: each decodes to one kind and one name.
          const found = this.engine.keys.parse(key);
          if (!found || (glob && !glob.matches(found.name))) continue;
          const info =
            found.kind === 'readWrite'
              ? await this.inspectReadWrite(found.name)
              : found.kind === 'semaphore'
                ? await this.inspectSemaphore(found.name)
                : await this.inspectLock(found.name, 'reentrant');
          if (info.locked) yield info;
        }
      } while (cursor !== '0');
    }
  }

  /**
   * The live module instances, from the index their heartbeats keep (no SCAN): at most `count`, in
   * one script call that also drops up to 100 expired members it meets; on a cluster, whose
   * instance hashes live in other slots, their identities cost one lookup each. An index member
   * whose identity is gone (it shut down meanwhile) is left out.
   */
  async liveInstances(options: LiveInstancesOptions = {}): Promise<LiveInstances> {
    const count = options.count ?? DEFAULT_INSTANCE_COUNT;
    if (!Number.isInteger(count) || count < 1 || count > MAX_INSTANCE_COUNT) throw new TypeError(INSTANCES_BAD_COUNT(count, MAX_INSTANCE_COUNT));
    const { client, instances } = this.engine;
    const reply = (await this.engine.call('liveInstances', (ticket) =>
      scripts.liveInstances.run(client, [instances.indexKey], [count, this.attribution.scriptPrefix()], ticket),
    )) as [number, number, unknown[]];
    const [serverTime, more, listed] = [Number(reply[0]), Number(reply[1]) === 1, reply[2] ?? []];
    const alive: Array<[string, number, unknown]> = [];
    for (let i = 0; i + 2 < listed.length; i += 3) alive.push([String(listed[i]), Number(listed[i + 1]), listed[i + 2]]);
    const fields = alive.flatMap(([clientId, , hash]) => [clientId, hash]);
    // Owner ids of the listed clients (`clientId:0`): `instances()` maps them to their identities.
    const known = await this.attribution.of(fields, alive.map(([clientId]) => `${clientId}:0`), 'liveInstances');
    const result: LiveInstanceInfo[] = [];
    for (const [clientId, aliveUntil] of alive) {
      const info = known.get(clientId);
      if (info) result.push({ ...info, aliveUntil });
    }
    return { serverTime, instances: result, more };
  }

  /** The servers a walk of every key goes over: each master of a cluster, else the one client. */
  masters(): RedisClient[] {
    const { client } = this.engine;
    return isCluster(client) ? (client.nodes('master') as RedisClient[]) : [client];
  }
}

