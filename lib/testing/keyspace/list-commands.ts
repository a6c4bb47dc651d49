import type { Commands } from './key-store';
import { integer, range } from './replies';

/** Lists: RPUSH, LPOP, LLEN, LINDEX, LRANGE, LREM. */

export const LIST_COMMANDS: Commands = {
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
};
