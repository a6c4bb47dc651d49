import { Inject, Injectable } from '@nestjs/common';
import { LockNotHeldError, LockTimeoutError } from '../errors';
import { RELEASE_FAILED, RELEASE_FOUND_NOTHING } from '../lock.messages';
import { checkLockName, checkPermits } from '../validators';
import type { LockRunContext } from '../locks/lock';
import { LockEngine } from '../runtime/lock-engine';
import { Semaphore, SemaphoreInfo, SemaphoreOptions, SemaphoreRunOptions } from './semaphore';

/**
 * Distributed semaphores (docs/architecture.md#semaphore): at most `permits` holders' permits at once across every
 * process, each holder's permits under a lease the watchdog renews, waiters in one FIFO line.
 */
@Injectable()
export class SemaphoreService {
  constructor(@Inject(LockEngine) private readonly engine: LockEngine) {}

  /**
   * The semaphore `name` with the limit `permits`. The limit is stored with the semaphore while it
   * is in use; a caller with another limit gets `SemaphoreLimitError` (see the README).
   */
  getSemaphore(name: string, options: SemaphoreOptions): Semaphore {
    checkLockName(name);
    checkPermits(options?.permits);
    return new Semaphore(this.engine, name, options.permits);
  }

  /**
   * Takes `take` permits (default 1) of `name` within `waitTime` (default: the module's
   * `defaultWaitTime`; else `LockTimeoutError` and `fn` never runs), runs `fn`, and gives them back
   * in `finally` whatever `fn` did.
   */
  async run<T>(name: string, fn: (context: LockRunContext) => T | Promise<T>, options: SemaphoreRunOptions): Promise<T> {
    const semaphore = this.getSemaphore(name, options);
    const waitTime = options.waitTime ?? this.engine.options.defaultWaitTime;
    const permit = await semaphore.tryAcquire({ ...options, waitTime });
    if (!permit) throw new LockTimeoutError(name, waitTime);
    try {
      let signal: AbortSignal | undefined;
      return await fn({
        name,
        fencingToken: permit.fencingToken,
        get signal(): AbortSignal {
          signal ??= permit.signal;
          return signal;
        },
      });
    } finally {
      await permit.release().catch((error: unknown) => {
        if (error instanceof LockNotHeldError) this.engine.logger.warn(RELEASE_FOUND_NOTHING(name));
        else this.engine.logger.error(RELEASE_FAILED(name, error));
      });
    }
  }

  /** The holders (permit id, permits, remaining lease, fencing token) and the waiters in line order. */
  inspect(name: string): Promise<SemaphoreInfo> {
    checkLockName(name);
    return new Semaphore(this.engine, name, 1).inspect();
  }
}
