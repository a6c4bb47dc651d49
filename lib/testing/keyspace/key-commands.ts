import { redisGlobToRegExp } from '../../redis/redis-glob';
import type { Commands, KeyStore } from './key-store';
import { error, integer, OK, StatusReply, SYNTAX } from './replies';

/** Keys, expiry and the server: PING, TIME, INFO, DBSIZE, FLUSHALL, TYPE, EXISTS, DEL, (P)EXPIRE, (P)TTL, SCAN. */

/**
 * PEXPIRE/EXPIRE with Redis 7's conditions: NX (only without an expiry), XX (only with one), GT /
 * LT (only a later / earlier one; no expiry counts as infinite). 0 when the key is missing or the
 * condition does not hold.
 */
function expireIn(keyspace: KeyStore, key: string, ms: number, now: number, options: readonly string[]): number {
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

function ttlOf(keyspace: KeyStore, key: string, now: number): number {
  const entry = keyspace.lookup(key, now);
  if (!entry) return -2;
  return entry.expiresAt === undefined ? -1 : entry.expiresAt - now;
}

export const KEY_COMMANDS: Commands = {
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
};
