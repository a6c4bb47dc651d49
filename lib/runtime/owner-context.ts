import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The locks held by the current call chain (lock key -> owner id). Asking again for a lock an
 * enclosing call holds reuses its owner (re-entry); any other lock gets a new owner, so concurrent
 * branches of one chain still exclude each other. Contexts are entered with `run`, never
 * `enterWith`, so nothing leaks into the caller.
 */
export class OwnerContext {
  private readonly storage = new AsyncLocalStorage<ReadonlyMap<string, string>>();

  ownerOf(lockKey: string): string | undefined {
    return this.storage.getStore()?.get(lockKey);
  }

  /** Runs `fn` with each `[lockKey, ownerId]` recorded as held. */
  runWith<T>(held: ReadonlyArray<readonly [string, string]>, fn: () => T): T {
    const parent = this.storage.getStore();
    if (held.every(([key, owner]) => parent?.get(key) === owner)) return fn();
    const next = new Map(parent);
    for (const [key, owner] of held) next.set(key, owner);
    return this.storage.run(next, fn);
  }
}
