// The instance identity is the runtime's (it writes it); re-exported here with the other inspect types.
import type { LockInstanceInfo } from '../runtime/instance-registry';
export type { LockInstanceInfo };

export interface LockHolderInfo {
  readonly ownerId: string;
  readonly holdCount: number;
  /** For a read-write lock: the mode of this hold. */
  readonly mode?: 'read' | 'write';
  /** The holder's module instance; absent when it is no longer registered (it stopped renewing). */
  readonly instance?: LockInstanceInfo;
}

export interface LockWaiterInfo {
  readonly ownerId: string;
  readonly instance?: LockInstanceInfo;
}

/** What `inspect(name)` and `list()` report about one lock. */
export interface LockInfo {
  readonly name: string;
  readonly kind: 'reentrant' | 'fair' | 'read-write';
  readonly locked: boolean;
  /** Remaining lease in ms; -2 when free. */
  readonly ttl: number;
  /** The current hold's fencing token (none for a free lock or a read-held read-write lock). */
  readonly fencingToken?: number;
  /** A read-write lock's mode while held. */
  readonly mode?: 'read' | 'write';
  readonly holders: readonly LockHolderInfo[];
  /** A fair lock's waiting line, first in line first. */
  readonly waiters?: readonly LockWaiterInfo[];
}

/** Options of `LockService.list()`. */
export interface ListLocksOptions {
  /** Glob on the lock name (Redis `MATCH` syntax: `*`, `?`, `[abc]`), e.g. `'order:*'`. Default: all. */
  match?: string;
  /** SCAN's `COUNT` hint: keys looked at per round trip (default 100). */
  count?: number;
}
