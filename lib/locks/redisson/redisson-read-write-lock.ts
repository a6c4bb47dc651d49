import type { Lock } from '../lock';
import type { OwnedLock } from '../owned-lock';
import { lockForChain } from '../chain-bound-lock';
import type { ReadWriteLock } from '../read-write-lock';
import type { LockEngine } from '../../engine/lock-engine';
import type { RedissonRuntime } from '../../layouts/redisson-runtime';
import { RedissonReadLock } from './redisson-read-lock';
import { RedissonWriteLock } from './redisson-write-lock';
import type { ReadWriteMode } from '../read-write-scripts';
import type { RedissonReadWriteView } from './redisson-read-write-view';

const WRITER_SUFFIX = ':write';

/**
 * The hold identity of a read-write lock in Redisson's layout: its own namespace of the key `N`,
 * which a plain lock and a semaphore of the same name share in Redisson (docs/redisson-interop.md#names).
 */
export const readWriteIdentity = (redisKey: string): string => `rw\n${redisKey}`;

/**
 * The view of `mode` of the read-write lock `name` for the call chain's owner (or `fallbackOwner`).
 * Inside a write hold the owner context names the writer's record (`<owner>:write`): the reader is
 * the same owner without the suffix (owner ids are `<uuid>:<n>`, so the suffix is unambiguous).
 */
export function redissonReadWriteView(engine: LockEngine, mode: ReadWriteMode, name: string, fallbackOwner: string | undefined): OwnedLock {
  const redisKey = (engine.redisson as RedissonRuntime).mapName(name);
  const identity = readWriteIdentity(redisKey);
  // Bound to the call chain's body when asked, not when made (docs/owners-and-reentry.md#the-owner-model).
  return lockForChain(engine, identity, fallbackOwner, (chainOwner): RedissonReadWriteView => {
    const owner = chainOwner.endsWith(WRITER_SUFFIX) ? chainOwner.slice(0, -WRITER_SUFFIX.length) : chainOwner;
    return mode === 'read' ? new RedissonReadLock(engine, name, identity, owner, redisKey) : new RedissonWriteLock(engine, name, identity, owner, redisKey);
  });
}

/**
 * `getReadWriteLock(name)` in Redisson's layout: Java's `RReadWriteLock` of the same name. Both
 * views share one owner, so write-then-read downgrades and read-then-write is a `LockUpgradeError`.
 */
export class RedissonReadWriteLock implements ReadWriteLock {
  private readonly read: OwnedLock;
  private readonly write: OwnedLock;

  constructor(
    engine: LockEngine,
    /** The lock's name, shared by its read and write views. */
    readonly name: string,
  ) {
    // Both views share this object's own owner (and, inside a body that holds the lock, re-enter it).
    const owner = engine.ids.nextOwner();
    this.read = redissonReadWriteView(engine, 'read', name, owner);
    this.write = redissonReadWriteView(engine, 'write', name, owner);
  }

  readLock(): Lock {
    return this.read;
  }

  writeLock(): Lock {
    return this.write;
  }
}
