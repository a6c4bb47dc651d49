import type { Lock } from '../lock';
import type { ReadWriteLock } from '../read-write-lock';
import type { LockEngine } from '../../runtime/lock-engine';
import type { RedissonRuntime } from '../../layouts/redisson-runtime';
import { RedissonReadLock } from './redisson-read-lock';
import { RedissonWriteLock } from './redisson-write-lock';
import type { ReadWriteMode, RedissonReadWriteView } from './redisson-read-write-view';

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
export function redissonReadWriteView(engine: LockEngine, mode: ReadWriteMode, name: string, fallbackOwner: string | undefined): RedissonReadWriteView {
  const redisKey = (engine.redisson as RedissonRuntime).mapName(name);
  const identity = readWriteIdentity(redisKey);
  let owner = engine.ownerFor(identity, fallbackOwner);
  if (owner.endsWith(WRITER_SUFFIX)) owner = owner.slice(0, -WRITER_SUFFIX.length);
  return mode === 'read' ? new RedissonReadLock(engine, name, identity, owner, redisKey) : new RedissonWriteLock(engine, name, identity, owner, redisKey);
}

/**
 * `getReadWriteLock(name)` in Redisson's layout: Java's `RReadWriteLock` of the same name. Both
 * views share one owner, so write-then-read downgrades and read-then-write is a `LockUpgradeError`.
 */
export class RedissonReadWriteLock implements ReadWriteLock {
  private readonly read: RedissonReadWriteView;
  private readonly write: RedissonReadWriteView;

  constructor(
    engine: LockEngine,
    /** The lock's name, shared by its read and write views. */
    readonly name: string,
  ) {
    this.read = redissonReadWriteView(engine, 'read', name, undefined);
    this.write = redissonReadWriteView(engine, 'write', name, this.read.ownerId);
  }

  readLock(): Lock {
    return this.read;
  }

  writeLock(): Lock {
    return this.write;
  }
}
