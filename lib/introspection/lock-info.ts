// The instance identity is the runtime's (it writes it); re-exported here with the other inspect types.
import type { LockInstanceInfo } from '../runtime/instance-registry';
export type { LockInstanceInfo };

/** One holder of a lock, as `inspect()` and `list()` report it. */
export interface LockHolderInfo {
  /** The holder's owner id (`clientId:n`). */
  readonly ownerId: string;
  /** Holds re-entered; for a semaphore (in `list`), the permits this holder took. */
  readonly holdCount: number;
  /** For a read-write lock: the mode of this hold. */
  readonly mode?: 'read' | 'write';
  /** The holder's module instance; absent when it is no longer registered (it stopped renewing). */
  readonly instance?: LockInstanceInfo;
  /** A semaphore holder's fencing token (in `list`; a lock's token is the record's `fencingToken`). */
  readonly fencingToken?: number;
  /**
   * When this hold began, in ms since the epoch on the Redis server's clock (compare it with the
   * record's `serverTime`, never with this process's clock). A re-entry keeps it; a read-write
   * lock's owner that holds both modes has one per mode. For a hold with a fencing token (a
   * reentrant or fair lock, a write hold, a semaphore holder) it is read from the token, which is
   * the server's clock in µs at the grant unless that would not be above the name's last token:
   * exact to the ms unless the server clock stepped back (then it is later than the grant by at
   * most the step, and never after `serverTime`). A read hold records it when it begins. Absent
   * when the hold carries neither (one taken by an older version of this library).
   */
  readonly heldSince?: number;
  /**
   * Layout 'redisson', a read hold: its remaining lease, the longest of its per-hold timeout keys
   * (-2 when none is left: the hold then lasts as long as the lock's hash).
   */
  readonly ttl?: number;
}

/** One waiter in a fair lock's line (or a semaphore's), in line order. */
export interface LockWaiterInfo {
  /** The waiter's owner id (`clientId:n`). */
  readonly ownerId: string;
  /** The waiter's module instance, when it is registered. */
  readonly instance?: LockInstanceInfo;
  /** A semaphore waiter's permits asked for (its `take`); absent for a lock's waiter. */
  readonly permits?: number;
  /**
   * Layout 'redisson', a fair lock's waiter: when Redisson drops it from the head of the queue if it
   * has not taken the lock, in ms since the epoch on the clock of the client that queued it (not
   * the server's: Redisson's deadlines are its clients').
   */
  readonly deadline?: number;
}

/** What `inspect(name)` and `list()` report about one lock (`list` reports semaphores too). */
export interface LockInfo {
  /** The lock's name. */
  readonly name: string;
  /** The kind of lock the name's Redis record belongs to. */
  readonly kind: 'reentrant' | 'fair' | 'read-write' | 'semaphore';
  /** True while anyone holds it. */
  readonly locked: boolean;
  /** Remaining lease in ms; -2 when free. */
  readonly ttl: number;
  /** The current hold's fencing token (none for a free lock or a read-held read-write lock). */
  readonly fencingToken?: number;
  /** A read-write lock's mode while held. */
  readonly mode?: 'read' | 'write';
  /** Its holders (several for a read lock or a semaphore). */
  readonly holders: readonly LockHolderInfo[];
  /** A fair lock's (or a semaphore's) waiting line, first in line first. */
  readonly waiters?: readonly LockWaiterInfo[];
  /**
   * How many wait in line in all, when the reader listed at most some of them (the lock board lists
   * the first 50 of each line): `waiters` may then be shorter than this. Absent from `inspect()` and
   * `list()`, which list every waiter.
   */
  readonly waiterCount?: number;
  /** A semaphore's limit (the `permits` it is in use with). */
  readonly permits?: number;
  /** A semaphore's permits free right now. */
  readonly available?: number;
  /**
   * The Redis server's clock when it answered, in ms since the epoch: `ttl` and each holder's
   * `heldSince` are on this clock, so a hold's age is `serverTime - heldSince` and its lease ends
   * at `serverTime + ttl`, whatever this process's clock says.
   */
  readonly serverTime: number;
}

/** A module instance that is alive now, as `LockService.liveInstances()` lists it. */
export interface LiveInstanceInfo extends LockInstanceInfo {
  /**
   * Until when it counts as alive, in ms on the server's clock: one watchdog lease past its last
   * heartbeat (a watchdog round, every third of a lease), unless its next heartbeat moves it on.
   */
  readonly aliveUntil: number;
}

/** What `LockService.liveInstances()` resolves. */
export interface LiveInstances {
  /** The Redis server's clock when it answered (ms since the epoch): `aliveUntil` is on it. */
  readonly serverTime: number;
  /** Live instances, the one soonest to expire first (at most `count`). */
  readonly instances: readonly LiveInstanceInfo[];
  /** True when more live instances exist than were listed (`count` was reached). */
  readonly more: boolean;
}

/** Options of `LockService.liveInstances()`. */
export interface LiveInstancesOptions {
  /** How many instances to list at most (default 100; 1 to 1,000, else a `TypeError`). */
  count?: number;
}

/** Options of `LockService.list()`. */
export interface ListLocksOptions {
  /**
   * Glob on the lock name (Redis `MATCH` syntax: `*`, `?`, `[abc]`, `[^a-z]`, `\x`), e.g. `'order:*'`.
   * Default: all. Matched by the library on names, never by Redis; a pattern with more than 4
   * wildcards, longer than twice `maxNameLength`, or invalid (`[z-a]`, an unclosed `[`) is refused
   * with a `TypeError` saying why. In layout 'redisson' it is applied to Redis key names, which
   * are the names themselves unless a `redisson.nameMapper` is set: list then reports mapped keys
   * (the mapper cannot be run backwards).
   */
  match?: string;
  /** SCAN's `COUNT` hint: keys looked at per round trip (default 100; 1 to 10,000, else a `TypeError`). */
  count?: number;
}
