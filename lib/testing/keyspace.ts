import { ReplyError } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { redisGlobToRegExp } from '../redis/redis-glob';

/** A Redis status reply (`+OK`): a string to a client, `{ ok = ... }` to a script. */
export class StatusReply {
  constructor(readonly text: string) {}
}

/** What a command answers: RESP2's integer, bulk string, nil, array and status. */
export type Reply = number | string | null | StatusReply | Reply[];

interface ValueTypes {
  string: string;
  hash: Map<string, string>;
  list: string[];
  zset: Map<string, number>;
}
type ValueType = keyof ValueTypes;

interface Entry {
  type: ValueType;
  value: ValueTypes[ValueType];
  expiresAt?: number;
}

const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';
const NOT_INTEGER = 'ERR value is not an integer or out of range';
const SYNTAX = 'ERR syntax error';

const error = (message: string): Error => new ReplyError(message);

function integer(text: string): number {
  if (!/^-?\d+$/.test(text)) throw error(NOT_INTEGER);
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw error(NOT_INTEGER);
  return value;
}

function score(text: string): number {
  const lower = text.toLowerCase();
  if (lower === '+inf' || lower === 'inf') return Number.POSITIVE_INFINITY;
  if (lower === '-inf') return Number.NEGATIVE_INFINITY;
  const value = Number(text);
  if (text.trim() === '' || Number.isNaN(value)) throw error('ERR value is not a valid float');
  return value;
}

/** A score as Redis writes it (`%.17g`, shortest form): integers without a decimal point. */
export function formatScore(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return 'inf';
  if (value === Number.NEGATIVE_INFINITY) return '-inf';
  return String(value);
}

/** A bound of ZRANGEBYSCORE: `(` makes it exclusive. */
function bound(text: string): { value: number; exclusive: boolean } {
  return text.startsWith('(') ? { value: score(text.slice(1)), exclusive: true } : { value: score(text), exclusive: false };
}

/** Start and stop of LRANGE/ZRANGE (negative counts from the end) as a slice of `length` items. */
function range(length: number, startText: string, stopText: string): [number, number] {
  let start = integer(startText);
  let stop = integer(stopText);
  if (start < 0) start = Math.max(0, length + start);
  if (stop < 0) stop = length + stop;
  stop = Math.min(stop, length - 1);
  return start > stop ? [0, 0] : [start, stop + 1];
}

/**
 * The data of one simulated Redis server: strings, hashes, lists and sorted sets with key expiry,
 * and the commands the library's scripts and queries use, answering as Redis 7 does. Expiry is
 * read from the server's clock (`InMemoryRedis.now`) when a key is touched (no timer), so fake
 * timers move it; a script sees one clock for its whole run, as in Redis.
 */
export class Keyspace {
  private readonly entries = new Map<string, Entry>();
  /** This server's `run_id` in INFO (RedLock tells two entries of one server apart by it). */
  readonly runId = randomBytes(20).toString('hex');
  private lastMicros = 0;

  /**
   * TIME in microseconds at `now` (ms): the server's clock has no microseconds, so two calls in one
   * millisecond would read the same time where Redis's clock moved on; it never repeats here.
   */
  microsAt(now: number): number {
    this.lastMicros = Math.max(now * 1000, this.lastMicros + 1);
    return this.lastMicros;
  }

  /** Runs one command; `now` is the command's (or the enclosing script's) clock. */
  execute(name: string, args: readonly string[], now: number): Reply {
    const command = COMMANDS[name.toLowerCase()];
    if (!command) throw error(`ERR unknown command '${name}', with args beginning with: ${args.slice(0, 3).map((a) => `'${a}'`).join(' ')}`);
    if (args.length < command.minArgs) throw error(`ERR wrong number of arguments for '${name.toLowerCase()}' command`);
    return command.run(this, args, now);
  }

  /** Every live key (SCAN, and the testing controls). */
  keys(now: number): string[] {
    const keys: string[] = [];
    for (const key of this.entries.keys()) if (this.lookup(key, now)) keys.push(key);
    return keys;
  }

  typeOf(key: string, now: number): string {
    return this.lookup(key, now)?.type ?? 'none';
  }

  delete(key: string): boolean {
    return this.entries.delete(key);
  }

  flush(): void {
    this.entries.clear();
  }

  /** The live entry of `key` (an expired one is removed on the way). */
  lookup(key: string, now: number): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry?.expiresAt !== undefined && entry.expiresAt <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  /** The live value of `key` if it has `type`; WRONGTYPE for another type. */
  read<T extends ValueType>(key: string, type: T, now: number): ValueTypes[T] | undefined {
    const entry = this.lookup(key, now);
    if (!entry) return undefined;
    if (entry.type !== type) throw error(WRONGTYPE);
    return entry.value as ValueTypes[T];
  }

  /** The value of `key` for writing, created empty (without expiry) when missing. */
  write<T extends ValueType>(key: string, type: T, now: number, empty: () => ValueTypes[T]): ValueTypes[T] {
    const current = this.read(key, type, now);
    if (current !== undefined) return current;
    const value = empty();
    this.entries.set(key, { type, value });
    return value;
  }

  /** Sets a string, dropping any expiry unless `expiresAt` is given. */
  setString(key: string, value: string, expiresAt: number | undefined): void {
    this.entries.set(key, expiresAt === undefined ? { type: 'string', value } : { type: 'string', value, expiresAt });
  }

  /** Drops a container that became empty (Redis never keeps an empty hash, list or sorted set). */
  dropIfEmpty(key: string, size: number): void {
    if (size === 0) this.entries.delete(key);
  }
}

interface Command {
  readonly minArgs: number;
  run(keyspace: Keyspace, args: readonly string[], now: number): Reply;
}

const OK = new StatusReply('OK');

function sortedMembers(zset: Map<string, number>): Array<[string, number]> {
  return [...zset.entries()].sort(([a, sa], [b, sb]) => (sa !== sb ? sa - sb : a < b ? -1 : a > b ? 1 : 0));
}

function withScores(members: Array<[string, number]>, scores: boolean): string[] {
  return scores ? members.flatMap(([member, value]) => [member, formatScore(value)]) : members.map(([member]) => member);
}

/**
 * PEXPIRE/EXPIRE with Redis 7's conditions: NX (only without an expiry), XX (only with one), GT /
 * LT (only a later / earlier one; no expiry counts as infinite). 0 when the key is missing or the
 * condition does not hold.
 */
function expireIn(keyspace: Keyspace, key: string, ms: number, now: number, options: readonly string[]): number {
  const flags = new Set(options.map((option) => option.toLowerCase()));
  for (const flag of flags) if (!['nx', 'xx', 'gt', 'lt'].includes(flag)) throw error(`ERR Unsupported option ${flag}`);
  if (flags.has('nx') && (flags.has('xx') || flags.has('gt') || flags.has('lt'))) {
    throw error('ERR NX and XX, GT or LT options at the same time are not compatible');
  }
  if (flags.has('gt') && flags.has('lt')) throw error('ERR GT and LT options at the same time are not compatible');
  const entry = keyspace.lookup(key, now);
  if (!entry) return 0;
  const at = now + ms;
  const current = entry.expiresAt;
  if (flags.has('nx') && current !== undefined) return 0;
  if (flags.has('xx') && current === undefined) return 0;
  if (flags.has('gt') && (current === undefined || at <= current)) return 0;
  if (flags.has('lt') && current !== undefined && at >= current) return 0;
  if (ms <= 0) keyspace.delete(key);
  else entry.expiresAt = at;
  return 1;
}

function ttlOf(keyspace: Keyspace, key: string, now: number): number {
  const entry = keyspace.lookup(key, now);
  if (!entry) return -2;
  return entry.expiresAt === undefined ? -1 : entry.expiresAt - now;
}

const COMMANDS: Record<string, Command> = {
  ping: { minArgs: 0, run: (_, args) => (args.length > 0 ? args[0] : new StatusReply('PONG')) },
  time: {
    minArgs: 0,
    run: (keyspace, __, now) => {
      const micros = keyspace.microsAt(now);
      return [String(Math.floor(micros / 1_000_000)), String(micros % 1_000_000)];
    },
  },
  info: {
    minArgs: 0,
    // The server version the library checks at start, and the few fields a client reads.
    run: (keyspace) =>
      `# Server\r\nredis_version:7.2.0\r\nredis_mode:standalone\r\nrun_id:${keyspace.runId}\r\nexecutable:nestjs-redis-locks/testing\r\n`,
  },
  dbsize: { minArgs: 0, run: (keyspace, _, now) => keyspace.keys(now).length },
  flushall: {
    minArgs: 0,
    run: (keyspace) => {
      keyspace.flush();
      return OK;
    },
  },
  type: { minArgs: 1, run: (keyspace, [key], now) => new StatusReply(keyspace.typeOf(key, now)) },
  exists: { minArgs: 1, run: (keyspace, keys, now) => keys.filter((key) => keyspace.lookup(key, now)).length },
  del: {
    minArgs: 1,
    run: (keyspace, keys, now) => keys.filter((key) => keyspace.lookup(key, now) && keyspace.delete(key)).length,
  },
  pexpire: { minArgs: 2, run: (keyspace, [key, ms, ...options], now) => expireIn(keyspace, key, integer(ms), now, options) },
  expire: { minArgs: 2, run: (keyspace, [key, s, ...options], now) => expireIn(keyspace, key, integer(s) * 1000, now, options) },
  pttl: { minArgs: 1, run: (keyspace, [key], now) => ttlOf(keyspace, key, now) },
  ttl: {
    minArgs: 1,
    run: (keyspace, [key], now) => {
      const ms = ttlOf(keyspace, key, now);
      return ms < 0 ? ms : Math.round(ms / 1000);
    },
  },
  scan: {
    minArgs: 1,
    // One pass over every key (cursor 0 back at once): enough for a keyspace of a test's size.
    run: (keyspace, [, ...options], now) => {
      let match: RegExp | undefined;
      let type: string | undefined;
      for (let i = 0; i < options.length; i += 2) {
        const option = options[i].toLowerCase();
        if (option === 'match') match = redisGlobToRegExp(options[i + 1]);
        else if (option === 'type') type = options[i + 1].toLowerCase();
        else if (option !== 'count') throw error(SYNTAX);
      }
      const keys = keyspace
        .keys(now)
        .filter((key) => (!match || match.test(key)) && (!type || keyspace.typeOf(key, now) === type));
      return ['0', keys];
    },
  },
  get: { minArgs: 1, run: (keyspace, [key], now) => keyspace.read(key, 'string', now) ?? null },
  set: {
    minArgs: 2,
    run: (keyspace, [key, value, ...options], now) => {
      let expiresAt: number | undefined;
      let keepTtl = false;
      let condition: 'nx' | 'xx' | undefined;
      let get = false;
      for (let i = 0; i < options.length; i++) {
        const option = options[i].toLowerCase();
        if (option === 'px' || option === 'ex') {
          const amount = integer(options[++i] ?? '');
          if (amount <= 0) throw error("ERR invalid expire time in 'set' command");
          expiresAt = now + (option === 'px' ? amount : amount * 1000);
        } else if (option === 'nx' || option === 'xx') condition = option;
        else if (option === 'get') get = true;
        else if (option === 'keepttl') keepTtl = true;
        else throw error(SYNTAX);
      }
      const existing = keyspace.lookup(key, now);
      const previous = get ? (keyspace.read(key, 'string', now) ?? null) : undefined;
      if ((condition === 'nx' && existing) || (condition === 'xx' && !existing)) return get ? previous! : null;
      keyspace.setString(key, value, keepTtl ? existing?.expiresAt : expiresAt);
      return get ? previous! : OK;
    },
  },
  incr: { minArgs: 1, run: (keyspace, [key], now) => incrementString(keyspace, key, 1, now) },
  incrby: { minArgs: 2, run: (keyspace, [key, by], now) => incrementString(keyspace, key, integer(by), now) },
  decrby: { minArgs: 2, run: (keyspace, [key, by], now) => incrementString(keyspace, key, -integer(by), now) },
  hset: {
    minArgs: 3,
    run: (keyspace, [key, ...pairs], now) => {
      if (pairs.length % 2 !== 0) throw error("ERR wrong number of arguments for 'hset' command");
      const hash = keyspace.write(key, 'hash', now, () => new Map());
      let added = 0;
      for (let i = 0; i < pairs.length; i += 2) {
        if (!hash.has(pairs[i])) added++;
        hash.set(pairs[i], pairs[i + 1]);
      }
      return added;
    },
  },
  hget: { minArgs: 2, run: (keyspace, [key, field], now) => keyspace.read(key, 'hash', now)?.get(field) ?? null },
  hmget: {
    minArgs: 2,
    run: (keyspace, [key, ...fields], now) => {
      const hash = keyspace.read(key, 'hash', now);
      return fields.map((field) => hash?.get(field) ?? null);
    },
  },
  hexists: { minArgs: 2, run: (keyspace, [key, field], now) => (keyspace.read(key, 'hash', now)?.has(field) ? 1 : 0) },
  hkeys: { minArgs: 1, run: (keyspace, [key], now) => [...(keyspace.read(key, 'hash', now) ?? new Map<string, string>()).keys()] },
  hlen: { minArgs: 1, run: (keyspace, [key], now) => keyspace.read(key, 'hash', now)?.size ?? 0 },
  hgetall: {
    minArgs: 1,
    run: (keyspace, [key], now) => [...(keyspace.read(key, 'hash', now) ?? new Map<string, string>()).entries()].flat(),
  },
  hdel: {
    minArgs: 2,
    run: (keyspace, [key, ...fields], now) => {
      const hash = keyspace.read(key, 'hash', now);
      if (!hash) return 0;
      const removed = fields.filter((field) => hash.delete(field)).length;
      keyspace.dropIfEmpty(key, hash.size);
      return removed;
    },
  },
  hincrby: {
    minArgs: 3,
    run: (keyspace, [key, field, by], now) => {
      const hash = keyspace.write(key, 'hash', now, () => new Map());
      const current = hash.get(field);
      if (current !== undefined && !/^-?\d+$/.test(current)) throw error('ERR hash value is not an integer');
      const next = Number(current ?? 0) + integer(by);
      hash.set(field, String(next));
      return next;
    },
  },
  rpush: {
    minArgs: 2,
    run: (keyspace, [key, ...values], now) => {
      const list = keyspace.write(key, 'list', now, () => []);
      list.push(...values);
      return list.length;
    },
  },
  lpop: {
    minArgs: 1,
    run: (keyspace, [key], now) => {
      const list = keyspace.read(key, 'list', now);
      if (!list) return null;
      const first = list.shift() ?? null;
      keyspace.dropIfEmpty(key, list.length);
      return first;
    },
  },
  llen: { minArgs: 1, run: (keyspace, [key], now) => keyspace.read(key, 'list', now)?.length ?? 0 },
  lindex: {
    minArgs: 2,
    run: (keyspace, [key, index], now) => {
      const list = keyspace.read(key, 'list', now) ?? [];
      const i = integer(index);
      return list[i < 0 ? list.length + i : i] ?? null;
    },
  },
  lrange: {
    minArgs: 3,
    run: (keyspace, [key, start, stop], now) => {
      const list = keyspace.read(key, 'list', now) ?? [];
      return list.slice(...range(list.length, start, stop));
    },
  },
  lrem: {
    minArgs: 3,
    run: (keyspace, [key, countText, value], now) => {
      const list = keyspace.read(key, 'list', now);
      if (!list) return 0;
      const count = integer(countText);
      const limit = count === 0 ? Number.POSITIVE_INFINITY : Math.abs(count);
      let removed = 0;
      if (count >= 0) {
        for (let i = 0; i < list.length && removed < limit; ) {
          if (list[i] === value) {
            list.splice(i, 1);
            removed++;
          } else i++;
        }
      } else {
        for (let i = list.length - 1; i >= 0 && removed < limit; i--) {
          if (list[i] === value) {
            list.splice(i, 1);
            removed++;
          }
        }
      }
      keyspace.dropIfEmpty(key, list.length);
      return removed;
    },
  },
  zadd: {
    minArgs: 3,
    run: (keyspace, [key, ...args], now) => {
      // GT (a lease that only grows) is the one flag the library's scripts use; any other flag is a
      // bad score here.
      const onlyGreater = args[0]?.toLowerCase() === 'gt';
      const pairs = onlyGreater ? args.slice(1) : args;
      if (pairs.length === 0 || pairs.length % 2 !== 0) throw error(SYNTAX);
      const scores = pairs.filter((_, i) => i % 2 === 0).map(score);
      const zset = keyspace.write(key, 'zset', now, () => new Map());
      let added = 0;
      for (let i = 0; i < pairs.length; i += 2) {
        const current = zset.get(pairs[i + 1]);
        if (current === undefined) added++;
        else if (onlyGreater && scores[i / 2] <= current) continue;
        zset.set(pairs[i + 1], scores[i / 2]);
      }
      return added;
    },
  },
  zcard: { minArgs: 1, run: (keyspace, [key], now) => keyspace.read(key, 'zset', now)?.size ?? 0 },
  zcount: {
    minArgs: 3,
    run: (keyspace, [key, minText, maxText], now) => {
      const min = bound(minText);
      const max = bound(maxText);
      let count = 0;
      for (const value of (keyspace.read(key, 'zset', now) ?? new Map<string, number>()).values()) {
        if ((min.exclusive ? value > min.value : value >= min.value) && (max.exclusive ? value < max.value : value <= max.value)) count++;
      }
      return count;
    },
  },
  zscore: {
    minArgs: 2,
    run: (keyspace, [key, member], now) => {
      const value = keyspace.read(key, 'zset', now)?.get(member);
      return value === undefined ? null : formatScore(value);
    },
  },
  zincrby: {
    minArgs: 3,
    run: (keyspace, [key, by, member], now) => {
      const delta = score(by);
      const zset = keyspace.write(key, 'zset', now, () => new Map());
      const value = (zset.get(member) ?? 0) + delta;
      zset.set(member, value);
      return formatScore(value);
    },
  },
  zrem: {
    minArgs: 2,
    run: (keyspace, [key, ...members], now) => {
      const zset = keyspace.read(key, 'zset', now);
      if (!zset) return 0;
      const removed = members.filter((member) => zset.delete(member)).length;
      keyspace.dropIfEmpty(key, zset.size);
      return removed;
    },
  },
  zrange: {
    minArgs: 3,
    // By rank, with WITHSCORES and REV; BYSCORE, BYLEX and LIMIT are not used by the library's
    // scripts and are refused rather than answered wrongly.
    run: (keyspace, [key, start, stop, ...options], now) => {
      let scores = false;
      let reverse = false;
      for (const option of options.map((o) => o.toLowerCase())) {
        if (option === 'withscores') scores = true;
        else if (option === 'rev') reverse = true;
        else if (['byscore', 'bylex', 'limit'].includes(option)) throw error(`ERR the testing kit's ZRANGE does not support ${option.toUpperCase()}`);
        else throw error(SYNTAX);
      }
      const members = sortedMembers(keyspace.read(key, 'zset', now) ?? new Map());
      if (reverse) members.reverse();
      return withScores(members.slice(...range(members.length, start, stop)), scores);
    },
  },
  zrangebyscore: {
    minArgs: 3,
    run: (keyspace, [key, minText, maxText, ...options], now) => {
      const min = bound(minText);
      const max = bound(maxText);
      let scores = false;
      let offset = 0;
      let count = Number.POSITIVE_INFINITY;
      for (let i = 0; i < options.length; i++) {
        const option = options[i].toLowerCase();
        if (option === 'withscores') scores = true;
        else if (option === 'limit') {
          offset = integer(options[++i] ?? '');
          const limit = integer(options[++i] ?? '');
          count = limit < 0 ? Number.POSITIVE_INFINITY : limit;
        } else throw error(SYNTAX);
      }
      const members = sortedMembers(keyspace.read(key, 'zset', now) ?? new Map()).filter(
        ([, value]) =>
          (min.exclusive ? value > min.value : value >= min.value) && (max.exclusive ? value < max.value : value <= max.value),
      );
      return withScores(members.slice(offset, offset + count), scores);
    },
  },
};

/** INCR/INCRBY/DECRBY: an integer string, kept with its TTL (Redisson's counters and fencing token). */
function incrementString(keyspace: Keyspace, key: string, by: number, now: number): number {
  const current = keyspace.read(key, 'string', now);
  if (current !== undefined && !/^-?\d+$/.test(current)) throw error(NOT_INTEGER);
  const next = Number(current ?? 0) + by;
  keyspace.setString(key, String(next), keyspace.lookup(key, now)?.expiresAt);
  return next;
}

/** Command names the keyspace answers (publish and friends are the server's). */
export const KEYSPACE_COMMANDS: readonly string[] = Object.keys(COMMANDS);
