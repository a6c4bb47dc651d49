import type { HeldLock } from '../runtime/held-locks';
import type { LockRunContext, TryLockOptions } from './lock';

/**
 * What `run` and the decorators need from a lock, whatever it is: one lock of any kind, a
 * multi-lock, or a semaphore's permits. Each kind answers for itself, so the run helper never asks
 * which one it has.
 */
export interface RunnableLock {
  /** The name errors and logs report, and `fn`'s `context.name`: one name, or a multi-lock's names. */
  readonly runName: string | readonly string[];
  tryLock(options?: TryLockOptions): Promise<boolean>;
  /** Releases the hold the run took. */
  unlock(): Promise<void>;
  /**
   * The holds the run records for its body's call chain once acquired (re-entry finds them there,
   * while each is still current: docs/architecture.md#owner-model).
   */
  heldLocks(): readonly HeldLock[];
  /** The context `fn` gets, which is also the services' `current()` inside it. */
  runContext(): LockRunContext;
  /**
   * `minHoldTime`'s release: the last hold is not released but left to expire `ms` from now (the
   * kind's renewal with that lease, on every member or master), and forgotten here, so nothing
   * renews it; a re-entered hold only drops its count, as `unlock` does.
   */
  keepHeldFor(ms: number): Promise<void>;
}
