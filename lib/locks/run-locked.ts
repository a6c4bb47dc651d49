import { LockNotHeldError, LockTimeoutError } from '../errors';
import { RELEASE_FAILED, RELEASE_FOUND_NOTHING } from '../lock.messages';
import type { LockEngine } from '../runtime/lock-engine';
import type { LockRunContext, RunOptions } from './lock';
import { MultiLock } from './multi-lock';
import type { OwnedLock } from './owned-lock';
import type { RunnableLock } from './runnable-lock';

/**
 * The body of every `run` helper and of the decorators: acquire within `waitTime` (else
 * `LockTimeoutError`, and `fn` never runs), call `fn` with the lock recorded in the owner context,
 * release in `finally`. A failed release is logged and never hides `fn`'s result or error.
 */
export function runLocked<T>(
  engine: LockEngine,
  lock: RunnableLock,
  fn: (context: LockRunContext) => T | Promise<T>,
  options: RunOptions | undefined,
): Promise<T> {
  const waitTime = options?.waitTime ?? engine.options.defaultWaitTime;
  let acquiring: Promise<boolean>;
  try {
    acquiring = lock.tryLock({
      waitTime,
      leaseTime: options?.leaseTime,
      signal: options?.signal,
      metricName: options?.metricName,
    });
  } catch (error) {
    return Promise.reject(error);
  }
  // A plain promise chain, not an async function, while the acquisition waits: a waiting caller
  // keeps no suspended frame of its own here (thousands of waiters in one process add up).
  return acquiring.then((acquired) => {
    if (!acquired) throw new LockTimeoutError(lock.runName, waitTime);
    return runHeld(engine, lock, fn);
  });
}

/**
 * `fn` under the acquired `lock`, recorded in the owner context; the release once `fn` settled,
 * whatever it did. A promise chain rather than an async function: fewer promises per run.
 */
function runHeld<T>(engine: LockEngine, lock: RunnableLock, fn: (context: LockRunContext) => T | Promise<T>): Promise<T> {
  let outcome: Promise<T>;
  try {
    // The same object is `fn`'s argument and the services' `current()` inside it.
    const context = lock.runContext();
    outcome = Promise.resolve(engine.ownerContext.runWith(lock.heldEntries(), () => fn(context), context));
  } catch (error) {
    outcome = Promise.reject(error);
  }
  return outcome.finally(() => release(engine, lock));
}

/** Releases a run's lock; a failed release is logged, never thrown (it must not hide `fn`'s outcome). */
function release(engine: LockEngine, lock: RunnableLock): Promise<void> {
  let releasing: Promise<void>;
  try {
    releasing = lock.unlock();
  } catch (error) {
    releasing = Promise.reject(error);
  }
  return releasing.catch((error: unknown) => {
    if (error instanceof LockNotHeldError) engine.logger.warn(RELEASE_FOUND_NOTHING(error.lockName));
    else engine.logger.error(RELEASE_FAILED(String(lock.runName), error));
  });
}

/** Makes the lock of one name, bound to `fallbackOwner` when the call chain does not hold it. */
export type LockFactory = (name: string, fallbackOwner: string | undefined) => OwnedLock;

/**
 * The `run` of every lock service: `name`, or every name of an array as one multi-lock whose
 * members share one new owner. Bad input rejects (never throws synchronously).
 */
export function runNamed<T>(
  engine: LockEngine,
  name: string | readonly string[],
  lockFor: LockFactory,
  fn: (context: LockRunContext) => T | Promise<T>,
  options: RunOptions | undefined,
): Promise<T> {
  try {
    if (!Array.isArray(name)) return runLocked(engine, lockFor(name as string, undefined), fn, options);
    const owner = engine.ids.nextOwner();
    return runLocked(engine, new MultiLock(name.map((n: string) => lockFor(n, owner)), engine.telemetry), fn, options);
  } catch (error) {
    return Promise.reject(error);
  }
}
