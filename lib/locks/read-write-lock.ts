import type { LockEngine } from '../engine/lock-engine';
import type { Lock } from './lock';
import { ReadWriteLockView } from './read-write-lock-view';
import type { ReadWriteMode } from './read-write-scripts';
import { ChainBoundLock } from './chain-bound-lock';
import type { ChainBinding } from '../runtime/owner-context';

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

/**
 * `getReadWriteLock(name)` inside a body that holds the read-write lock `name`: each view re-enters
 * that body's hold while the body runs and its hold is current, and otherwise asks as this object's
 * own owner, which both views share (docs/owners-and-reentry.md#the-owner-model).
 */
export class ChainBoundReadWriteLock implements ReadWriteLock {
  private readonly read: ChainBoundLock;
  private readonly write: ChainBoundLock;
  private own: NativeReadWriteLock | undefined;

  constructor(
    engine: LockEngine,
    readonly name: string,
    readWriteKey: string,
    binding: ChainBinding,
  ) {
    const body = (mode: ReadWriteMode): ReadWriteLockView => {
      const view = new ReadWriteLockView(engine, name, readWriteKey, binding.ownerId, mode);
      view.reenterOnly = true;
      return view;
    };
    const own = (): NativeReadWriteLock => (this.own ??= new NativeReadWriteLock(engine, name, readWriteKey, engine.ids.nextOwner()));
    this.read = new ChainBoundLock(binding, body('read'), () => own().readLock() as ReadWriteLockView);
    this.write = new ChainBoundLock(binding, body('write'), () => own().writeLock() as ReadWriteLockView);
  }

  readLock(): Lock {
    return this.read;
  }

  writeLock(): Lock {
    return this.write;
  }
}
