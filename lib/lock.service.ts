import { Inject, Injectable } from '@nestjs/common';
import { LockError } from './errors';
import { MULTI_LOCK_FOREIGN_MEMBER, REDLOCK_NOT_CONFIGURED } from './lock.messages';
import type { Lock, LockRunContext, RunOptions, SkippingRunOptions, WaitingRunOptions } from './locks/lock';
import { MultiLock } from './locks/multi-lock';
import { isOwnedLock, type OwnedLock } from './locks/owned-lock';
import { lockForChain } from './locks/chain-bound-lock';
import { RedLock } from './locks/red-lock';
import { NativeRedLockCalls } from './locks/red-lock-calls';
import { RedissonRedLockCalls } from './locks/redisson/redisson-red-lock-calls';
import { ReentrantLock } from './locks/reentrant-lock';
import { RedissonLock } from './locks/redisson/redisson-lock';
import { LockEngine } from './engine/lock-engine';
import { LockInspector } from './introspection/lock-inspector';
import { runLocked, runNamed } from './locks/run-locked';
import type { ListLocksOptions, LiveInstances, LiveInstancesOptions, LockInfo } from './introspection/lock-info';
import { checkLockName } from './validators';

/** Reentrant locks, multi-locks and RedLock, plus `run` for the common acquire/work/release shape. */
@Injectable()
export class LockService {
  constructor(
    @Inject(LockEngine) private readonly engine: LockEngine,
    @Inject(LockInspector) private readonly inspector: LockInspector,
  ) {}

  /**
   * The reentrant lock `name`. Inside a `run` (or decorated method) that holds `name`, the object
   * shares that call chain's owner; otherwise it owns itself.
   * @throws {@link InvalidLockNameError} when `name` is not a non-empty string.
   * @throws {@link LockNameTooLongError} when `name` is longer than `maxNameLength`.
   */
  getLock(name: string): Lock {
    return this.reentrant(name, undefined);
  }

  /**
   * All-or-nothing over several locks of any kind (a multi-lock given here adds its members),
   * taken in a stable order so two multi-locks over overlapping sets never deadlock.
   */
  getMultiLock(...locks: Lock[]): MultiLock {
    return new MultiLock(
      locks.flatMap((lock, i) => {
        if (lock instanceof MultiLock) return lock.locks;
        if (!isOwnedLock(lock)) throw new TypeError(MULTI_LOCK_FOREIGN_MEMBER(i, lock));
        return [lock];
      }),
      this.engine.telemetry,
    );
  }

  /**
   * The RedLock `name` over the independent masters of the module's `redlock.clients`: held when a
   * majority of them granted it in time. Waiting retries with jitter (no pub/sub). See
   * docs/lock-kinds.md#redlock-safety-limits before relying on it.
   * @throws {@link LockError} when the module has no `redlock` option.
   * @throws {@link InvalidLockNameError} when `name` is not a non-empty string (or {@link LockNameTooLongError} when too long).
   */
  getRedLock(name: string): Lock {
    const { engine } = this;
    const { redisson } = engine;
    checkLockName(name, redisson ? engine.keys.maxNameLength : undefined);
    const masters = engine.redlockMasters;
    if (!masters) throw new LockError(REDLOCK_NOT_CONFIGURED(name));
    // Redisson's layout: Java's RedissonRedLock over getLock(N) on the same masters (docs/redisson-interop.md#redlock).
    const calls = redisson
      ? new RedissonRedLockCalls(redisson.mapName(name), engine.ids, engine.releaseRecordTtlMs)
      : new NativeRedLockCalls(engine.keys.lock(name), engine.fenceMemoryMs);
    // Bound to the call chain's body when asked, not when made (docs/owners-and-reentry.md#the-owner-model).
    return lockForChain(engine, RedLock.identity(calls.key), undefined, (owner) => new RedLock(engine, masters, name, calls, owner));
  }

  /**
   * Holds the RedLock `name` (a majority of the module's `redlock.clients`) while `fn` runs, as `run`
   * does for a lock: `fn` gets `{ name, signal, fencingToken }`, and its `signal` aborts with
   * `LockLostError` when a majority no longer holds it; the release lets go of exactly the hold this
   * call took. See docs/lock-kinds.md#redlock.
   * @throws {@link LockTimeoutError} (rejects) not acquired within `waitTime`; `fn` was not called.
   * @throws {@link LockError} (rejects) the module has no `redlock` option.
   * @throws {@link InvalidLockNameError} (rejects) `name` is not a non-empty string (or {@link LockNameTooLongError} when too long).
   */
  runRedLock<T>(name: string, fn: (context: LockRunContext) => T | Promise<T>, options: SkippingRunOptions): Promise<T | undefined>;
  runRedLock<T>(name: string, fn: (context: LockRunContext) => T | Promise<T>, options?: WaitingRunOptions): Promise<T>;
  runRedLock<T>(name: string, fn: (context: LockRunContext) => T | Promise<T>, options?: RunOptions): Promise<T | undefined>;
  runRedLock<T>(name: string, fn: (context: LockRunContext) => T | Promise<T>, options?: RunOptions): Promise<T | undefined> {
    let lock: OwnedLock;
    try {
      lock = this.getRedLock(name) as OwnedLock;
    } catch (error) {
      return Promise.reject(error);
    }
    return runLocked(this.engine, lock, fn, options);
  }

  /**
   * Acquires `name` (or every name of an array, as one multi-lock) within `waitTime`, runs `fn`,
   * and releases whatever `fn` did. Throws `LockTimeoutError` without calling `fn` on timeout.
   * @throws {@link LockTimeoutError} (rejects) not acquired within `waitTime`; `fn` was not called.
   * @throws {@link LockDeadlockError} (rejects) the wait closed a deadlock cycle and was the one refused.
   * @throws {@link LockUnavailableError} (rejects) Redis could not be asked.
   * @throws {@link LockShutdownError} (rejects) the module shut down while the call waited.
   * @throws {@link InvalidLockNameError} (rejects) a name is not a non-empty string (or {@link LockNameTooLongError} when too long).
   */
  run<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options: SkippingRunOptions): Promise<T | undefined>;
  run<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options?: WaitingRunOptions): Promise<T>;
  run<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options?: RunOptions): Promise<T | undefined>;
  run<T>(name: string | readonly string[], fn: (context: LockRunContext) => T | Promise<T>, options?: RunOptions): Promise<T | undefined> {
    return runNamed(this.engine, name, (n, owner) => this.reentrant(n, owner), fn, options);
  }

  /**
   * Who holds the lock `name`, in one round trip: holders with their hold counts, module
   * instances (client name, host, pid, start time) and `heldSince`, the remaining lease, the
   * fencing token, the waiting line if a fair lock of the name has one, and the Redis server's
   * clock (`serverTime`, ms) that `ttl` and `heldSince` are on: a hold's age is
   * `serverTime - heldSince` whatever this process's clock says. A free lock says `locked: false`.
   * In layout 'redisson' (docs/redisson-interop.md#introspection) a Java holder shows its owner id
   * and count only, no hold has `heldSince`, `fencingToken` is the last token handed out (with
   * `redisson.fencedLocks` only), and a read-write lock found at the name's key is reported as one.
   * @throws {@link InvalidLockNameError} (rejects) `name` is not a non-empty string (or {@link LockNameTooLongError} when too long).
   * @throws {@link LockUnavailableError} (rejects) Redis could not be asked.
   */
  inspect(name: string): Promise<LockInfo> {
    try {
      checkLockName(name);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.inspector.inspectLock(name, 'reentrant');
  }

  /**
   * Every reentrant, fair and read-write lock and every semaphore that exists now (SCAN, bounded,
   * on every master of a cluster), each as its own kind under its own name, as `inspect` describes
   * it; `match` filters the names (`'order:*'`: at most 4 wildcards; an invalid or too costly
   * pattern is refused with a `TypeError`). In layout 'redisson': every hash whose fields are Redisson
   * lock owners (and `mode`), reported under its Redis key; semaphores are not listed.
   * @throws {@link LockNamePatternError} (on iteration) `match` is invalid or too costly.
   * @throws {@link LockUnavailableError} (on iteration) Redis could not be asked.
   */
  list(options?: ListLocksOptions): AsyncIterable<LockInfo> {
    return this.inspector.list(options);
  }

  /**
   * The module instances (processes using this library on this Redis and key prefix) alive now,
   * from the index their watchdog heartbeats keep: no SCAN, at most `count` (default 100, at most
   * 1,000) per call, `more` saying whether others were left out, each with its identity (client
   * name, host, pid, start time) and `aliveUntil`, on the server's clock (`serverTime`). An
   * instance that crashed drops out one watchdog lease after its last heartbeat.
   * @throws `TypeError` (rejects) `count` is not a whole number from 1 to 1,000.
   * @throws {@link LockUnavailableError} (rejects) Redis could not be asked.
   */
  liveInstances(options?: LiveInstancesOptions): Promise<LiveInstances> {
    return this.inspector.liveInstances(options);
  }

  /**
   * The innermost lock the current call chain holds (a `run` callback or a decorated method, and
   * everything they call): `{ name, signal, fencingToken }`, or undefined outside any.
   */
  current(): LockRunContext | undefined {
    return this.engine.ownerContext.current();
  }

  /**
   * The reentrant lock `name` for the call chain: re-entering the hold of a body that holds it while
   * that body runs (docs/owners-and-reentry.md#the-owner-model), else of `fallbackOwner` or a new owner.
   */
  private reentrant(name: string, fallbackOwner: string | undefined): OwnedLock {
    const { engine } = this;
    const { redisson } = engine;
    if (redisson) {
      checkLockName(name, engine.keys.maxNameLength);
      const key = redisson.mapName(name);
      return lockForChain(engine, key, fallbackOwner, (owner) => new RedissonLock(engine, name, key, owner, key));
    }
    checkLockName(name);
    const lockKey = engine.keys.lock(name);
    return lockForChain(engine, lockKey, fallbackOwner, (owner) => new ReentrantLock(engine, name, lockKey, owner));
  }
}
