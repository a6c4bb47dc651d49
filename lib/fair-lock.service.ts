import { Inject, Injectable } from '@nestjs/common';
import type { Lock, LockRunContext, RunOptions } from './locks/lock';
import { FairLock } from './locks/fair-lock';
import { MultiLock } from './locks/multi-lock';
import { checkLockName } from './lock.service';
import { LockEngine } from './runtime/lock-engine';
import { runLocked } from './runtime/run-locked';

/**
 * Fair locks: waiters get the lock in the order they asked, across processes. A fair lock is the
 * plain lock of the same name with a waiting line, so the two kinds exclude each other.
 */
@Injectable()
export class FairLockService {
  constructor(@Inject(LockEngine) private readonly engine: LockEngine) {}

  /**
   * The fair lock `name`. Inside a `run` (or decorated method) that holds `name`, the object shares
   * that call chain's owner; otherwise it owns itself.
   */
  getLock(name: string): Lock {
    return this.fair(name, undefined);
  }

  /**
   * Waits in line for `name` (or for every name of an array, as one multi-lock) within `waitTime`,
   * runs `fn`, and releases whatever `fn` did. Throws `LockTimeoutError` without calling `fn` on timeout.
   */
  run<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options?: RunOptions): Promise<T> {
    try {
      if (typeof name === 'string' || !Array.isArray(name)) return runLocked(this.engine, this.fair(name as string, undefined), fn, options);
      const owner = this.engine.ids.nextOwner();
      return runLocked(this.engine, new MultiLock(name.map((n: string) => this.fair(n, owner))), fn, options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** A fair lock bound to the call chain's owner of `name`, else to `fallbackOwner` or a new one. */
  private fair(name: string, fallbackOwner: string | undefined): FairLock {
    checkLockName(name);
    const lockKey = this.engine.keys.lock(name);
    const owner = this.engine.ownerContext.ownerOf(lockKey) ?? fallbackOwner ?? this.engine.ids.nextOwner();
    return new FairLock(this.engine, name, lockKey, owner);
  }
}
