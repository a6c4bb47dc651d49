import type { Commands } from './key-store';
import { error, integer } from './replies';

/** Hashes: HSET, HGET, HMGET, HEXISTS, HKEYS, HLEN, HGETALL, HDEL, HINCRBY. */

export const HASH_COMMANDS: Commands = {
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
};
