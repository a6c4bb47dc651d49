import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockRunContext } from './run-context';

/** What the call chain holds: lock key -> owner id, and the innermost lock's run context. */
interface ChainLocks {
  readonly owners: ReadonlyMap<string, string>;
  readonly current: LockRunContext | undefined;
}

/**
 * The locks held by the current call chain (lock key -> owner id). Asking again for a lock an
 * enclosing call holds reuses its owner (re-entry); any other lock gets a new owner, so concurrent
 * branches of one chain still exclude each other. Contexts are entered with `run`, never
 * `enterWith`, so nothing leaks into the caller. It also knows the innermost lock (`current()`).
 */
export class OwnerContext {
  private readonly storage = new AsyncLocalStorage<ChainLocks>();

  ownerOf(lockKey: string): string | undefined {
    return this.storage.getStore()?.owners.get(lockKey);
  }

  /** The innermost lock the call chain holds: `{ name, signal, fencingToken }`, or undefined. */
  current(): LockRunContext | undefined {
    return this.storage.getStore()?.current;
  }

  /** Runs `fn` with each `[lockKey, ownerId]` recorded as held and `current` as the innermost lock. */
  runWith<T>(held: ReadonlyArray<readonly [string, string]>, fn: () => T, current?: LockRunContext): T {
    const parent = this.storage.getStore();
    if (parent && held.every(([key, owner]) => parent.owners.get(key) === owner)) {
      if (current === undefined || parent.current === current) return fn();
      return this.storage.run({ owners: parent.owners, current }, fn);
    }
    const next = new Map(parent?.owners);
    for (const [key, owner] of held) next.set(key, owner);
    return this.storage.run({ owners: next, current: current ?? parent?.current }, fn);
  }
}
