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
}

/** One waiter in a fair lock's line (or a semaphore's), in line order. */
export interface LockWaiterInfo {
  /** The waiter's owner id (`clientId:n`). */
  readonly ownerId: string;
  /** The waiter's module instance, when it is registered. */
  readonly instance?: LockInstanceInfo;
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
  /** A semaphore's limit (the `permits` it is in use with). */
  readonly permits?: number;
  /** A semaphore's permits free right now. */
  readonly available?: number;
}

/** Options of `LockService.list()`. */
export interface ListLocksOptions {
  /**
   * Glob on the lock name (Redis `MATCH` syntax: `*`, `?`, `[abc]`, `[^a-z]`, `\x`), e.g. `'order:*'`.
   * Default: all. Matched by the library on names, never by Redis; a pattern with more than 4
   * wildcards, longer than twice `maxNameLength`, or invalid (`[z-a]`, an unclosed `[`) is refused
   * with a `TypeError` saying why.
   */
  match?: string;
  /** SCAN's `COUNT` hint: keys looked at per round trip (default 100; 1 to 10,000, else a `TypeError`). */
  count?: number;
}
