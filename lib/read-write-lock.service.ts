import { Inject, Injectable } from '@nestjs/common';
import type { LockRunContext, RunOptions, SkippingRunOptions, WaitingRunOptions } from './locks/lock';
import { ChainBoundReadWriteLock, NativeReadWriteLock, type ReadWriteLock } from './locks/read-write-lock';
import { lockForChain } from './locks/chain-bound-lock';
import { ReadWriteLockView } from './locks/read-write-lock-view';
import type { ReadWriteMode } from './locks/read-write-scripts';
import { RedissonReadWriteLock, redissonReadWriteView } from './locks/redisson/redisson-read-write-lock';
import type { OwnedLock } from './locks/owned-lock';
import { checkLockName } from './validators';
import { LockEngine } from './engine/lock-engine';
import { LockInspector } from './introspection/lock-inspector';
import { runNamed } from './locks/run-locked';
import type { LockInfo } from './introspection/lock-info';

/** Read-write locks: many readers at once, or one writer. */
@Injectable()
export class ReadWriteLockService {
  constructor(
    @Inject(LockEngine) private readonly engine: LockEngine,
    @Inject(LockInspector) private readonly inspector: LockInspector,
  ) {}

  /**
   * The read-write lock `name`: `{ readLock(), writeLock() }`, both owned by this object (or, inside
   * a `runRead`/`runWrite` of `name`, by that call chain), so write-then-read downgrades.
   */
  getReadWriteLock(name: string): ReadWriteLock {
    checkLockName(name);
    // Layout 'redisson': Java's RReadWriteLock of the same name (docs/redisson-interop.md#read-write).
    if (this.engine.redisson) return new RedissonReadWriteLock(this.engine, name);
    const key = this.engine.keys.readWrite(name);
    const binding = this.engine.ownerContext.bindingOf(key);
    if (binding) return new ChainBoundReadWriteLock(this.engine, name, key, binding);
    return new NativeReadWriteLock(this.engine, name, key, this.engine.ids.nextOwner());
  }

  /**
   * Holds the read lock of `name` (or of every name of an array, as one multi-lock) while `fn`
   * runs, alongside other readers. Inside a `runWrite` of the same name this re-uses the writer's
   * owner (a downgrade). Throws `LockTimeoutError` without calling `fn` on timeout.
   * @throws {@link LockTimeoutError} (rejects) not acquired within `waitTime`; `fn` was not called.
   * @throws {@link LockDeadlockError} (rejects) the wait closed a deadlock cycle and was the one refused.
   * @throws {@link LockUnavailableError} (rejects) Redis could not be asked.
   */
  runRead<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options: SkippingRunOptions): Promise<T | undefined>;
  runRead<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options?: WaitingRunOptions): Promise<T>;
  runRead<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options?: RunOptions): Promise<T | undefined>;
  runRead<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options?: RunOptions): Promise<T | undefined> {
    return this.runIn('read', name, fn, options);
  }

  /**
   * Holds the write lock of `name` (or of every name of an array, as one multi-lock) while `fn`
   * runs. Inside a `runRead` of the same name this rejects with `LockUpgradeError` at once (waiting
   * for itself would never end). Throws `LockTimeoutError` without calling `fn` on timeout.
   * @throws {@link LockUpgradeError} (rejects) the call chain holds the read lock of `name`.
   * @throws {@link LockTimeoutError} (rejects) not acquired within `waitTime`; `fn` was not called.
   * @throws {@link LockDeadlockError} (rejects) the wait closed a deadlock cycle and was the one refused.
   * @throws {@link LockUnavailableError} (rejects) Redis could not be asked.
   */
  runWrite<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options: SkippingRunOptions): Promise<T | undefined>;
  runWrite<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options?: WaitingRunOptions): Promise<T>;
  runWrite<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options?: RunOptions): Promise<T | undefined>;
  runWrite<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options?: RunOptions): Promise<T | undefined> {
    return this.runIn('write', name, fn, options);
  }

  /**
   * Who holds the read-write lock `name` and in which mode (each reader and the writer, with hold
   * counts, module instances and `heldSince`: a read hold's start is recorded when it begins, the
   * write hold's is read from its fencing token), its lease and, in write mode, the fencing token,
   * and the Redis server's clock (`serverTime`, ms) those are on; one round trip.
   */
  inspect(name: string): Promise<LockInfo> {
    try {
      checkLockName(name);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.inspector.inspectReadWrite(name);
  }

  /**
   * The innermost lock the current call chain holds (a `run` callback or a decorated method, and
   * everything they call): `{ name, signal, fencingToken }`, or undefined outside any.
   */
  current(): LockRunContext | undefined {
    return this.engine.ownerContext.current();
  }

  private runIn<T>(
    mode: ReadWriteMode,
    name: string | readonly string[],
    fn: (context: LockRunContext) => T | Promise<T>,
    options: RunOptions | undefined,
  ): Promise<T | undefined> {
    return runNamed(this.engine, name, (n, owner) => this.view(mode, n, owner), fn, options);
  }

  private view(mode: ReadWriteMode, name: string, fallbackOwner: string | undefined): OwnedLock {
    checkLockName(name);
    if (this.engine.redisson) return redissonReadWriteView(this.engine, mode, name, fallbackOwner);
    const key = this.engine.keys.readWrite(name);
    const { engine } = this;
    return lockForChain(engine, key, fallbackOwner, (owner) => new ReadWriteLockView(engine, name, key, owner, mode));
  }
}
