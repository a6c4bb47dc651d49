import { LockNotHeldError } from '../errors';
import { BaseLock } from './base-lock';
import type { LockRunContext } from './lock';
import type { OwnedLock } from './owned-lock';
import type { RunnableLock } from './runnable-lock';

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

/** A lock of one name on one Redis server (reentrant, fair, read, write), as `run` uses it. */
export abstract class SingleLock extends BaseLock implements RunnableLock {
  get runName(): string {
    return this.name;
  }

  heldEntries(): ReadonlyArray<readonly [string, string]> {
    return heldEntriesOf(this);
  }

  runContext(): LockRunContext {
    return runContextOf(this);
  }

  /**
   * The kind's renewal script with `ms` as the lease, in place of the release: the owner's hold (for
   * a read-write lock, whatever it still holds) then expires in Redis by itself.
   */
  keepHeldFor(ms: number): Promise<void> {
    const hold = this.hold;
    if (!hold || hold.holdCount > 1) return this.unlock();
    const { engine } = this;
    // Forgotten first, as a release does: the watchdog must not renew it past `ms` meanwhile.
    engine.holds.released(hold);
    const { script, keys, args } = this.renewalCall(ms);
    return engine.call(this.name, (ticket) => script.run(engine.client, keys, args, ticket)).then((renewed) => {
      if (renewed !== 1) throw new LockNotHeldError(this.name);
    });
  }
}
