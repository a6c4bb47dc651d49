import { Logger } from '@nestjs/common';
import { LockShutdownError } from '../errors';
import type { FairLockService } from '../fair-lock.service';
import type { LockService } from '../lock.service';
import type { LockRunContext, RunOptions, RunPolicy } from '../locks/lock';
import { skippedAtShutdown } from '../locks/run-locked';
import type { ReadWriteLockService } from '../read-write-lock.service';
import type { SemaphoreRunOptions } from '../semaphores/semaphore.options';
import type { SemaphoreService } from '../semaphores/semaphore.service';
import type { LockMode } from './distributed-lock.options';

/** The lock keys of one call: one name, or several taken together as a multi-lock. */
export type LockNames = string | readonly string[];

/** The module's own log context, for the calls that arrive once the binding closed. */
const logger = new Logger('LockModule');

/**
 * The lock services of one LockModule instance, as a decorated method finds them at call time. Each
 * mode goes to its own service (never to another lock kind); an array of names is one multi-lock.
 */
export class LockBinding {
  /** Set when the application closes: later calls fail as a shutdown, not as a missing module. */
  closed = false;

  constructor(
    private readonly locks: LockService,
    private readonly fair: FairLockService,
    private readonly readWrite: ReadWriteLockService,
    private readonly semaphores: SemaphoreService,
    /** The module's `maxNameLength`: a key template value making a longer name is a bad request. */
    readonly maxNameLength: number,
  ) {}

  /** `@DistributedSemaphore`: takes permits of the semaphore `name` around `body`. */
  runSemaphore<T>(
    name: string,
    body: (context: LockRunContext) => T | Promise<T>,
    options: SemaphoreRunOptions & RunPolicy,
  ): Promise<T | undefined> {
    if (this.closed) return this.refuse(name, options);
    return this.semaphores.run(name, body, options);
  }

  /** Resolves `undefined` without running `body` when `options.skipIfLocked` skipped a busy lock. */
  run<T>(mode: LockMode, names: LockNames, body: (context: LockRunContext) => T | Promise<T>, options: RunOptions): Promise<T | undefined> {
    if (this.closed) return this.refuse(names, options);
    switch (mode) {
      case 'reentrant':
        return this.locks.run(names, body, options);
      case 'fair':
        return this.fair.run(names, body, options);
      case 'read':
        return this.readWrite.runRead(names, body, options);
      case 'write':
        return this.readWrite.runWrite(names, body, options);
    }
  }

  /** A call after the application closed: a shutdown, or a skip for a call that skips when it cannot lock. */
  private refuse(names: LockNames, options: RunPolicy): Promise<undefined> {
    if (options.skipIfLocked === true) return Promise.resolve(skippedAtShutdown(logger, names));
    return Promise.reject(new LockShutdownError(typeof names === 'string' ? names : names.join(',')));
  }
}
