import type { Commands } from './key-store';
import { error, integer, range, SYNTAX } from './replies';

/** Sorted sets: ZADD (GT), ZCARD, ZCOUNT, ZSCORE, ZINCRBY, ZREM, ZRANGE (WITHSCORES, REV), ZRANGEBYSCORE. */

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
function bound(text: string): Bound {
  return text.startsWith('(') ? { value: score(text.slice(1)), exclusive: true } : { value: score(text), exclusive: false };
}

interface Bound {
  value: number;
  exclusive: boolean;
}

/** Whether `value` lies between the bounds of ZCOUNT / ZRANGEBYSCORE. */
function within(value: number, min: Bound, max: Bound): boolean {
  return (min.exclusive ? value > min.value : value >= min.value) && (max.exclusive ? value < max.value : value <= max.value);
}

function sortedMembers(zset: Map<string, number>): Array<[string, number]> {
  return [...zset.entries()].sort(([a, sa], [b, sb]) => (sa !== sb ? sa - sb : a < b ? -1 : a > b ? 1 : 0));
}

function withScores(members: Array<[string, number]>, scores: boolean): string[] {
  return scores ? members.flatMap(([member, value]) => [member, formatScore(value)]) : members.map(([member]) => member);
}

export const ZSET_COMMANDS: Commands = {
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
        if (within(value, min, max)) count++;
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
      const members = sortedMembers(keyspace.read(key, 'zset', now) ?? new Map()).filter(([, value]) => within(value, min, max));
      return withScores(members.slice(offset, offset + count), scores);
    },
  },
};
