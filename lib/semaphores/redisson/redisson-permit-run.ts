import { LockNotHeldError } from '../../errors';
import type { LockRunContext, TryLockOptions } from '../../locks/lock';
import { HeldLockRunContext } from '../../locks/owned-lock';
import type { RunnableLock } from '../../locks/runnable-lock';
import type { HeldLock } from '../../runtime/held-locks';
import type { Permit } from '../permit';
import { permitIdsOf } from './redisson-permit-request';
import type { RedissonSemaphore } from './redisson-semaphore';

const NO_HOLDS: readonly HeldLock[] = [];

/** A Redisson-layout semaphore's permits as `run` takes them (see `PermitRun`, the native one). */
export class RedissonPermitRun implements RunnableLock {
  private permit: Permit | null = null;

  constructor(
    private readonly semaphore: RedissonSemaphore,
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

  /** `minHoldTime`: the permits' deadline set to `ms` from now in place of the release; they go back by themselves then. */
  keepHeldFor(ms: number): Promise<void> {
    const { permit, semaphore } = this;
    const hold = this.hold();
    const ids = permit && permitIdsOf(permit);
    if (!permit || !hold || !ids) return this.unlock();
    // Forgotten first, as a release does: the watchdog must not renew them past `ms` meanwhile.
    semaphore.engine.holds.forget(hold);
    return semaphore.renewIds(ids, ms, true).then((renewed) => {
      if (!renewed) throw new LockNotHeldError(semaphore.name);
    });
  }

  heldLocks(): readonly HeldLock[] {
    const hold = this.hold();
    return hold ? [hold] : NO_HOLDS;
  }

  runContext(): LockRunContext {
    return new HeldLockRunContext(this.semaphore.name, undefined, this.permit ?? undefined);
  }

  private hold(): HeldLock | undefined {
    const { permit, semaphore } = this;
    return (permit && semaphore.engine.holds.get(semaphore.holdKey, permit.ownerId)) || undefined;
  }
}
