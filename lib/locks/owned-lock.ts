import type { HeldLock } from '../runtime/held-locks';
import type { Lock, LockRunContext } from './lock';
import type { RunnableLock } from './runnable-lock';

/**
 * A lock object bound to one owner: what a multi-lock and the run helpers need from each member,
 * whatever its kind (the single-server kinds of `BaseLock`, or a RedLock over several masters).
 */
export interface OwnedLock extends Lock, RunnableLock {
  /** Identifies the lock in this process: the owner context and the hold registry are keyed by it. */
  readonly lockKey: string;
  readonly ownerId: string;
  /** The current owner's hold in this process, if any. */
  readonly hold: HeldLock | undefined;
}

export function isOwnedLock(value: unknown): value is OwnedLock {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as OwnedLock).lockKey === 'string' &&
    typeof (value as OwnedLock).ownerId === 'string' &&
    typeof (value as OwnedLock).tryLock === 'function' &&
    typeof (value as OwnedLock).runContext === 'function'
  );
}

/** A single lock's `[lockKey, ownerId]`: the one entry its run records in the owner context. */
export function heldEntriesOf(lock: OwnedLock): ReadonlyArray<readonly [string, string]> {
  return [[lock.lockKey, lock.ownerId]];
}

/**
 * The run context of a single lock. Its `signal` is looked up when `fn` first reads it: most callers
 * never do, and the hold then never has to create its AbortController.
 */
export function runContextOf(lock: OwnedLock): LockRunContext {
  const hold = lock.hold;
  let signal: AbortSignal | undefined;
  return {
    name: lock.name,
    fencingToken: lock.getFencingToken(),
    get signal(): AbortSignal {
      signal ??= hold?.signal ?? new AbortController().signal;
      return signal;
    },
  };
}
