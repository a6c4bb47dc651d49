import type { Commands, KeyStore } from './key-store';
import { error, integer, NOT_INTEGER, OK, SYNTAX } from './replies';

/** Strings: GET, SET (PX/EX, NX/XX, GET, KEEPTTL), INCR, INCRBY, DECRBY. */

export const STRING_COMMANDS: Commands = {
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
};

/** INCR/INCRBY/DECRBY: an integer string, kept with its TTL (Redisson's counters and fencing token). */
function incrementString(keyspace: KeyStore, key: string, by: number, now: number): number {
  const current = keyspace.read(key, 'string', now);
  if (current !== undefined && !/^-?\d+$/.test(current)) throw error(NOT_INTEGER);
  const next = Number(current ?? 0) + by;
  keyspace.setString(key, String(next), keyspace.lookup(key, now)?.expiresAt);
  return next;
}
