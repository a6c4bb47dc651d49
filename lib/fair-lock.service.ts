import { Inject, Injectable } from '@nestjs/common';
import type { Lock, LockRunContext, RunOptions, SkippingRunOptions, WaitingRunOptions } from './locks/lock';
import { FairLock } from './locks/fair-lock';
import { RedissonFairLock } from './locks/redisson/redisson-fair-lock';
import { checkLockName } from './validators';
import { lockForChain } from './locks/chain-bound-lock';
import type { OwnedLock } from './locks/owned-lock';
import { LockEngine } from './engine/lock-engine';
import { LockInspector } from './introspection/lock-inspector';
import { runNamed } from './locks/run-locked';
import type { LockInfo } from './introspection/lock-info';

/**
 * Fair locks: waiters get the lock in the order they asked, across processes. A fair lock is the
 * plain lock of the same name with a waiting line, so the two kinds exclude each other.
 */
@Injectable()
export class FairLockService {
  constructor(
    @Inject(LockEngine) private readonly engine: LockEngine,
    @Inject(LockInspector) private readonly inspector: LockInspector,
  ) {}

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
   * @throws {@link LockTimeoutError} (rejects) not acquired within `waitTime`; `fn` was not called.
   * @throws {@link LockDeadlockError} (rejects) the wait closed a deadlock cycle and was the one refused.
   * @throws {@link LockUnavailableError} (rejects) Redis could not be asked.
   * @throws {@link LockShutdownError} (rejects) the module shut down while the call waited.
   */
  run<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options: SkippingRunOptions): Promise<T | undefined>;
  run<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options?: WaitingRunOptions): Promise<T>;
  run<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options?: RunOptions): Promise<T | undefined>;
  run<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options?: RunOptions): Promise<T | undefined> {
    return runNamed(this.engine, name, (n, owner) => this.fair(n, owner), fn, options);
  }

  /**
   * Who holds the lock `name` and who waits for it, in line order, with each one's module instance,
   * in one round trip (see `LockService.inspect`): each holder's `heldSince` and the server's
   * clock (`serverTime`) included.
   */
  inspect(name: string): Promise<LockInfo> {
    try {
      checkLockName(name);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.inspector.inspectLock(name, 'fair');
  }

  /**
   * The innermost lock the current call chain holds (a `run` callback or a decorated method, and
   * everything they call): `{ name, signal, fencingToken }`, or undefined outside any.
   */
  current(): LockRunContext | undefined {
    return this.engine.ownerContext.current();
  }

  /**
   * The fair lock `name` for the call chain: re-entering the hold of a body that holds it while that
   * body runs (docs/owners-and-reentry.md#the-owner-model), else of `fallbackOwner` or a new owner.
   */
  private fair(name: string, fallbackOwner: string | undefined): OwnedLock {
    const { engine } = this;
    const { redisson } = engine;
    if (redisson) {
      // Java's RFairLock of the mapped name: its hash is the plain lock's, so both share one identity.
      checkLockName(name, engine.keys.maxNameLength);
      const key = redisson.mapName(name);
      return lockForChain(engine, key, fallbackOwner, (owner) => new RedissonFairLock(engine, name, key, owner, key));
    }
    checkLockName(name);
    const lockKey = engine.keys.lock(name);
    return lockForChain(engine, lockKey, fallbackOwner, (owner) => new FairLock(engine, name, lockKey, owner));
  }
}
