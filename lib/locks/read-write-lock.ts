import type { LockEngine } from '../runtime/lock-engine';
import type { Lock } from './lock';
import { ReadWriteLockView } from './read-write-lock-view';

/**
 * A read-write lock: many owners read at once, one owner writes (and may read too: write-then-read
 * downgrades). Its two views share this object's owner, so `writeLock().lock()` followed by
 * `readLock().lock()` downgrades, while `readLock()` then `writeLock()` is a `LockUpgradeError`.
 */
export interface ReadWriteLock {
  /** The lock's name, shared by its read and write views. */
  readonly name: string;
  /** Shared with other readers; `isLocked()` is true while the lock is held in read mode. */
  readLock(): Lock;
  /** Exclusive; `isLocked()` is true while the lock is held in write mode. */
  writeLock(): Lock;
}

/** The read-write lock of the native layout (docs/architecture.md#read-write). */
export class NativeReadWriteLock implements ReadWriteLock {
  private readonly read: ReadWriteLockView;
  private readonly write: ReadWriteLockView;

  constructor(
    engine: LockEngine,
    /** The lock's name, shared by its read and write views. */
    readonly name: string,
    readWriteKey: string,
    ownerId: string,
  ) {
    this.read = new ReadWriteLockView(engine, name, readWriteKey, ownerId, 'read');
    this.write = new ReadWriteLockView(engine, name, readWriteKey, ownerId, 'write');
  }

  /** Shared with other readers; `isLocked()` is true while the lock is held in read mode. */
  readLock(): Lock {
    return this.read;
  }

  /** Exclusive; `isLocked()` is true while the lock is held in write mode. */
  writeLock(): Lock {
    return this.write;
  }
}
