import { RedissonNames } from '../layouts/redisson-names';
import type { RedissonRuntime } from '../layouts/redisson-runtime';
import { LuaScript } from '../redis/lua-script';
import type { RedisClient } from '../redis/redis-client';
import { InstanceAttribution, pairs, withInstance } from './instance-attribution';
import type { LockHolderInfo, LockInfo, LockWaiterInfo } from './lock-info';
import type { InspectionSource } from './inspection-source';
import type { NameGlob } from './name-glob';

const scripts = {
  lock: LuaScript.named('redisson-lock-inspect'),
  readWrite: LuaScript.named('redisson-rw-inspect'),
};

/** What a Redisson-layout key holds, as the inspect scripts see it (lua/include/redisson-lock-hash.lua). */
type Shape = 'none' | 'lock' | 'read-write' | 'foreign';

interface Reading {
  readonly shape: Shape;
  readonly info: LockInfo;
}

/**
 * `inspect` and `list` in layout 'redisson' (docs/redisson-interop.md#introspection): Redisson's
 * keys hold only `owner -> count` (and a read-write lock's `mode`), so a holder is an owner field, a
 * Node holder is attributed to its module instance by its client id, and a Java holder shows its
 * owner id and count only. No `heldSince` (nothing records it); a fencing token only with
 * `redisson.fencedLocks` (the last one handed out). A plain and a read-write lock of one name share
 * Redisson's key, so either inspect reports the kind it finds there.
 */
export class RedissonInspector {
  constructor(
    private readonly engine: InspectionSource,
    private readonly runtime: RedissonRuntime,
    private readonly attribution: InstanceAttribution,
  ) {}

  /** The plain or fair lock `name` (or the read-write lock found at its key), reported under `name`. */
  async inspectLock(name: string, kind: 'reentrant' | 'fair', limitArgs: number[]): Promise<LockInfo> {
    const key = this.runtime.mapName(name);
    const reading = await this.readLock(name, key, kind, limitArgs);
    return reading.shape === 'read-write' ? (await this.readReadWrite(name, key)).info : reading.info;
  }

  /** The read-write lock `name` (or the plain lock found at its key), reported under `name`. */
  async inspectReadWrite(name: string, limitArgs: number[]): Promise<LockInfo> {
    const key = this.runtime.mapName(name);
    const reading = await this.readReadWrite(name, key);
    return reading.shape === 'lock' ? (await this.readLock(name, key, 'reentrant', limitArgs)).info : reading.info;
  }

  /** Whatever lock the Redis key `key` holds, under the key's name; undefined when it holds none. */
  async inspectKey(key: string, limitArgs: number[]): Promise<LockInfo | undefined> {
    const reading = await this.readLock(key, key, 'reentrant', limitArgs);
    if (reading.shape === 'lock') return reading.info;
    if (reading.shape !== 'read-write') return undefined;
    const readWrite = await this.readReadWrite(key, key);
    return readWrite.shape === 'read-write' ? readWrite.info : undefined;
  }

  /**
   * Every plain, fair and read-write lock of Redisson's layout on `masters`: SCAN for hashes
   * (`count` per round trip), each inspected by the script that tells a lock's hash from any other
   * (one round trip per hash). `glob` is applied to Redis key names: with a `nameMapper`, list
   * reports mapped keys (the mapper cannot be run backwards).
   */
  async *list(masters: readonly RedisClient[], count: number, glob: NameGlob | undefined): AsyncGenerator<LockInfo> {
    // This library's own hashes (instance identities, contention counters) are not locks.
    const ownPrefix = this.engine.instances.keyPrefix;
    for (const node of masters) {
      let cursor = '0';
      do {
        const [next, keys] = (await this.engine.call('list', () => node.scan(cursor, 'COUNT', count, 'TYPE', 'hash'))) as [string, string[]];
        cursor = next;
        for (const key of keys) {
          if (key.startsWith(ownPrefix) || (glob && !glob.matches(key))) continue;
          const info = await this.inspectKey(key, []);
          if (info?.locked) yield info;
        }
      } while (cursor !== '0');
    }
  }

  private async readLock(name: string, key: string, kind: 'reentrant' | 'fair', limitArgs: number[]): Promise<Reading> {
    const { client } = this.engine;
    const keys = [key, RedissonNames.fairQueue(key), RedissonNames.fairTimeouts(key), RedissonNames.fenceToken(key)];
    const args = [this.attribution.scriptPrefix(), this.runtime.options.fencedLocks ? 1 : 0, ...limitArgs];
    const reply = (await this.engine.call(name, (ticket) => scripts.lock.run(client, keys, args, ticket))) as [
      Shape,
      number,
      string | null,
      string[],
      Array<string | null>,
      number,
      unknown[],
      number,
    ];
    const [shape, ttl, token, holderFields, waiterFields, queueLength, instanceFields] = reply;
    const serverTime = Number(reply[7]);
    const owners = pairs(holderFields);
    const queued: Array<[string, string | null]> = [];
    for (let i = 0; i + 1 < waiterFields.length; i += 2) queued.push([String(waiterFields[i]), waiterFields[i + 1]]);
    const instances = await this.attribution.of(instanceFields, [...owners.map(([owner]) => owner), ...queued.map(([owner]) => owner)], name);
    const holders = owners.map(([ownerId, count]): LockHolderInfo => withInstance({ ownerId, holdCount: Number(count) }, instances));
    const locked = holders.length > 0 && Number(ttl) !== -2;
    // Plain and fair locks share the hash: a queue means a fair lock's waiters.
    const fair = kind === 'fair' || Number(queueLength) > 0;
    const waiters = queued.map(([ownerId, deadline]): LockWaiterInfo =>
      withInstance({ ownerId, ...(deadline == null ? {} : { deadline: Number(deadline) }) }, instances),
    );
    const info: LockInfo = {
      name,
      kind: fair ? 'fair' : 'reentrant',
      locked,
      ttl: shape === 'lock' ? Number(ttl) : -2,
      ...(locked && token != null ? { fencingToken: Number(token) } : {}),
      holders,
      ...(fair ? { waiters, ...(limitArgs.length > 0 ? { waiterCount: Number(queueLength) } : {}) } : {}),
      serverTime,
    };
    return { shape, info };
  }

  private async readReadWrite(name: string, key: string): Promise<Reading> {
    const { client } = this.engine;
    const args = [this.attribution.scriptPrefix(), RedissonNames.readKeyPrefix(key)];
    const reply = (await this.engine.call(name, (ticket) => scripts.readWrite.run(client, [key], args, ticket))) as [
      Shape,
      number,
      string | null,
      unknown[],
      unknown[],
      number,
    ];
    const [shape, ttl, mode, holderFields, instanceFields] = reply;
    const serverTime = Number(reply[5]);
    // { owner id, hold count, mode, a reader's longest timeout-key TTL }
    const holds: Array<{ ownerId: string; holdCount: number; mode: 'read' | 'write'; ttl: unknown }> = [];
    for (let i = 0; i + 3 < holderFields.length; i += 4) {
      holds.push({ ownerId: String(holderFields[i]), holdCount: Number(holderFields[i + 1]), mode: holderFields[i + 2] as 'read' | 'write', ttl: holderFields[i + 3] });
    }
    const instances = await this.attribution.of(instanceFields, holds.map((hold) => hold.ownerId), name);
    const holders = holds.map(({ ownerId, holdCount, mode: holdMode, ttl: holdTtl }): LockHolderInfo =>
      withInstance({ ownerId, holdCount, mode: holdMode, ...(holdMode === 'read' ? { ttl: Number(holdTtl) } : {}) }, instances),
    );
    const locked = holders.length > 0 && Number(ttl) !== -2;
    const info: LockInfo = {
      name,
      kind: 'read-write',
      locked,
      ttl: shape === 'read-write' ? Number(ttl) : -2,
      ...(locked && mode ? { mode: mode as 'read' | 'write' } : {}),
      holders,
      serverTime,
    };
    return { shape, info };
  }
}
