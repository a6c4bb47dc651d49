import { LockNotHeldError } from '../errors';
import type { LockRunContext, TryLockOptions } from '../locks/lock';
import { HeldLockRunContext } from '../locks/owned-lock';
import type { RunnableLock } from '../locks/runnable-lock';
import { LuaScript } from '../redis/lua-script';
import type { HeldLock } from '../runtime/held-locks';
import type { Permit } from './permit';
import type { Semaphore } from './semaphore';

const renewScript = LuaScript.named('semaphore-renew');
/** What a permit run records for re-entry: nothing (permits are not re-entered). */
const NO_HOLDS: readonly HeldLock[] = [];

/**
 * A semaphore's permits as `run` takes them: `take` permits acquired by `tryLock`, given back by
 * `unlock`. Permits are not reentrant, so the run records no owner of its own, only the context
 * (`current()`, `@LockContext()`).
 */
export class PermitRun implements RunnableLock {
  private permit: Permit | null = null;

  constructor(
    private readonly semaphore: Semaphore,
    private readonly take: number | undefined,
  ) {}

  get runName(): string {
    return this.semaphore.name;
  }

  async tryLock(options?: TryLockOptions): Promise<boolean> {
    this.permit = await this.semaphore.tryAcquire({ ...options, take: this.take });
    return this.permit !== null;
  }

  unlock(): Promise<void> {
    if (!this.permit) return Promise.reject(new LockNotHeldError(this.semaphore.name));
    return this.permit.release();
  }

  /**
   * The holder's renewal with `ms` as the lease, in place of the release: the permits go back by
   * themselves then (the next acquisition drops an ended lease).
   */
  keepHeldFor(ms: number): Promise<void> {
    const permit = this.permit;
    const { engine, keys, name } = this.semaphore;
    const hold = permit && engine.holds.get(keys.base, permit.ownerId);
    if (!permit || !hold) return this.unlock();
    // Forgotten first, as a release does: the watchdog must not renew them past `ms` meanwhile.
    engine.holds.forget(hold);
    const args = [ms, permit.ownerId];
    return engine.call(name, (ticket) => renewScript.run(engine.client, [keys.base, keys.leases], args, ticket)).then((renewed) => {
      if (renewed !== 1) throw new LockNotHeldError(name);
    });
  }

  /** The permits' hold: a wait inside the run holds it up (docs/deadlocks.md). */
  heldLocks(): readonly HeldLock[] {
    const permit = this.permit;
    const { engine, keys } = this.semaphore;
    const hold = permit && engine.holds.get(keys.base, permit.ownerId);
    return hold ? [hold] : NO_HOLDS;
  }

  runContext(): LockRunContext {
    const permit = this.permit ?? undefined;
    return new HeldLockRunContext(this.semaphore.name, permit?.fencingToken || undefined, permit);
  }
}
