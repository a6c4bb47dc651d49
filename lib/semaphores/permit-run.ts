import { LockNotHeldError } from '../errors';
import type { LockRunContext, TryLockOptions } from '../locks/lock';
import type { RunnableLock } from '../locks/runnable-lock';
import type { Permit, Semaphore } from './semaphore';

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

  heldEntries(): ReadonlyArray<readonly [string, string]> {
    return [];
  }

  runContext(): LockRunContext {
    const permit = this.permit;
    let signal: AbortSignal | undefined;
    return {
      name: this.semaphore.name,
      fencingToken: permit?.fencingToken,
      get signal(): AbortSignal {
        signal ??= permit?.signal ?? new AbortController().signal;
        return signal;
      },
    };
  }
}
