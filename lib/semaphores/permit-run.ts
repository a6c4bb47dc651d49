import { LockNotHeldError } from '../errors';
import type { LockRunContext, TryLockOptions } from '../locks/lock';
import { HeldLockRunContext } from '../locks/owned-lock';
import type { RunnableLock } from '../locks/runnable-lock';
import type { HeldLock } from '../runtime/held-locks';
import type { Permit } from './permit';
import type { Semaphore } from './semaphore';

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
   * The permits' lease becomes `ms` from now, in place of the release: they go back by themselves
   * then (the next acquisition drops an ended lease; in Redisson's layout, reclaims it).
   */
  keepHeldFor(ms: number): Promise<void> {
    const { permit, semaphore } = this;
    const hold = this.hold();
    if (!permit || !hold) return this.unlock();
    // Forgotten first, as a release does: the watchdog must not renew them past `ms` meanwhile.
    semaphore.engine.holds.forget(hold);
    return semaphore.keepPermitFor(permit, ms).then((renewed) => {
      if (!renewed) throw new LockNotHeldError(semaphore.name);
    });
  }

  /** The permits' hold: a wait inside the run holds it up (docs/deadlocks.md). */
  heldLocks(): readonly HeldLock[] {
    const hold = this.hold();
    return hold ? [hold] : NO_HOLDS;
  }

  private hold(): HeldLock | undefined {
    const { permit, semaphore } = this;
    return (permit && semaphore.engine.holds.get(semaphore.holdKey, permit.ownerId)) || undefined;
  }

  runContext(): LockRunContext {
    const permit = this.permit ?? undefined;
    return new HeldLockRunContext(this.semaphore.name, permit?.fencingToken || undefined, permit);
  }
}
