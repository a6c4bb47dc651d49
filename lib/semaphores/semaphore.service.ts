import { Inject, Injectable } from '@nestjs/common';
import { checkLockName, checkPermits } from '../validators';
import type { LockRunContext, RunPolicy, SkippingRunOptions, WaitingRunOptions } from '../locks/lock';
import { runLocked } from '../locks/run-locked';
import { LockEngine } from '../engine/lock-engine';
import { PermitRun } from './permit-run';
import { Semaphore } from './semaphore';
import type { SemaphoreForceReleaseOptions, SemaphoreInfo, SemaphoreOptions, SemaphoreRunOptions } from './semaphore.options';
import { RedissonSemaphore } from './redisson/redisson-semaphore';
import type { RunnableLock } from '../locks/runnable-lock';

/**
 * Distributed semaphores (docs/architecture.md#semaphore): at most `permits` holders' permits at once across every
 * process, each holder's permits under a lease the watchdog renews, waiters in one FIFO line.
 */
@Injectable()
export class SemaphoreService {
  constructor(@Inject(LockEngine) private readonly engine: LockEngine) {}

  /**
   * The semaphore `name` with the limit `permits`. The limit is stored with the semaphore while it
   * is in use; a caller with another limit gets `SemaphoreLimitError` (see docs/semaphores.md).
   */
  getSemaphore(name: string, options: SemaphoreOptions): Semaphore {
    checkLockName(name);
    checkPermits(options?.permits);
    return this.semaphoreOf(name, options.permits);
  }

  /**
   * Takes `take` permits (default 1) of `name` within `waitTime` (default: the module's
   * `defaultWaitTime`; else `LockTimeoutError` and `fn` never runs), runs `fn`, and gives them back
   * in `finally` whatever `fn` did. `skipIfLocked` and `minHoldTime` as for `LockService.run`.
   * @throws {@link LockTimeoutError} (rejects) the permits were not taken within `waitTime`; `fn` was not called.
   * @throws {@link SemaphoreLimitError} (rejects) the semaphore is in use with another `permits` limit.
   * @throws {@link LockUnavailableError} (rejects) Redis could not be asked.
   */
  run<T>(name: string, fn: (context: LockRunContext) => T | Promise<T>, options: SemaphoreRunOptions & SkippingRunOptions): Promise<T | undefined>;
  run<T>(name: string, fn: (context: LockRunContext) => T | Promise<T>, options: SemaphoreRunOptions & WaitingRunOptions): Promise<T>;
  run<T>(name: string, fn: (context: LockRunContext) => T | Promise<T>, options: SemaphoreRunOptions & RunPolicy): Promise<T | undefined>;
  run<T>(name: string, fn: (context: LockRunContext) => T | Promise<T>, options: SemaphoreRunOptions & RunPolicy): Promise<T | undefined> {
    let permits: RunnableLock;
    try {
      const semaphore = this.getSemaphore(name, options);
      permits = new PermitRun(semaphore, options.take);
    } catch (error) {
      return Promise.reject(error);
    }
    return runLocked(this.engine, permits, fn, options);
  }

  /**
   * The innermost lock or permits the current call chain holds (a `run` callback or a decorated
   * method, and everything they call): `{ name, signal, fencingToken }`, or undefined outside any.
   */
  current(): LockRunContext | undefined {
    return this.engine.ownerContext.current();
  }

  /**
   * The holders (permit id, permits, remaining lease, fencing token, `heldSince`), the waiters in
   * line order with the permits each asks for, and the Redis server's clock (`serverTime`, ms) the
   * leases and `heldSince` are on.
   */
  inspect(name: string): Promise<SemaphoreInfo> {
    checkLockName(name);
    return this.semaphoreOf(name, 1).inspect();
  }

  /**
   * Takes one holder's permits of `name` back by force, only while the holder with `fencingToken`
   * (and `permitId`, when given) still holds them, as `inspect()` showed it: an operator never
   * takes back permits granted after they looked. The freed permits go to the waiters at the head
   * of the line, as after a release. Resolves true when it took them back, false otherwise.
   * @throws `TypeError` (rejects) `fencingToken` is not a positive whole number, or `permitId` is not a non-empty string.
   * @throws {@link InvalidLockNameError} (rejects) `name` is not a non-empty string (or {@link LockNameTooLongError} when too long).
   * @throws {@link LockUnavailableError} (rejects) Redis could not be asked.
   */
  forceRelease(name: string, holder: SemaphoreForceReleaseOptions): Promise<boolean> {
    try {
      checkLockName(name);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.semaphoreOf(name, 1).forceRelease(holder);
  }

  /** Layout 'redisson': Java Redisson's RPermitExpirableSemaphore of the name (docs/redisson-interop.md#semaphores). */
  private semaphoreOf(name: string, permits: number): Semaphore {
    return this.engine.redisson ? new RedissonSemaphore(this.engine, name, permits) : new Semaphore(this.engine, name, permits);
  }
}
