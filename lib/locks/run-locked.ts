import type { LoggerService } from '@nestjs/common';
import { LockNotHeldError, LockShutdownError, LockTimeoutError } from '../errors';
import {
  INVALID_MIN_HOLD_TIME,
  LOCK_SKIPPED,
  LOCK_SKIPPED_AT_SHUTDOWN,
  MIN_HOLD_OVER_LEASE,
  RELEASE_FAILED,
  RELEASE_FOUND_NOTHING,
  RELEASE_LEFT_TO_SHUTDOWN,
} from '../lock.messages';
import { SKIPS_IF_LOCKED, type AcquisitionOptions } from '../metrics/lock-telemetry';
import type { LockEngine } from '../engine/lock-engine';
import { monotonicNow } from '../monotonic-clock';
import type { OwnerFrame } from '../runtime/owner-context';
import type { LockRunContext, RunOptions, TryLockOptions } from './lock';
import { MultiLock } from './multi-lock';
import type { OwnedLock } from './owned-lock';
import type { RunnableLock } from './runnable-lock';

/**
 * Throws a `RangeError` unless `minHoldTime` is a finite number >= 0 that does not exceed
 * `leaseTime` (a lock that expires before its minimum hold ended would not keep anything).
 */
export function checkMinHoldTime(minHoldTime: unknown, leaseTime: number | undefined): void {
  if (minHoldTime === undefined) return;
  if (typeof minHoldTime !== 'number' || !Number.isFinite(minHoldTime) || minHoldTime < 0) {
    throw new RangeError(INVALID_MIN_HOLD_TIME(minHoldTime));
  }
  if (leaseTime !== undefined && minHoldTime > leaseTime) throw new RangeError(MIN_HOLD_OVER_LEASE(minHoldTime, leaseTime));
}

/**
 * The body of every `run` helper and of the decorators: acquire within `waitTime` (else
 * `LockTimeoutError`, and `fn` never runs; with `skipIfLocked`, `undefined` and a debug line), call
 * `fn` with the lock recorded in the owner context, release in `finally` (with `minHoldTime`, keep
 * it until then). A failed release is logged and never hides `fn`'s result or error.
 */
export function runLocked<T>(
  engine: LockEngine,
  lock: RunnableLock,
  fn: (context: LockRunContext) => T | Promise<T>,
  options: RunOptions | undefined,
): Promise<T | undefined> {
  const skip = options?.skipIfLocked === true;
  const waitTime = options?.waitTime ?? (skip ? 0 : engine.options.defaultWaitTime);
  const minHoldTime = options?.minHoldTime;
  let acquiring: Promise<boolean>;
  try {
    checkMinHoldTime(minHoldTime, options?.leaseTime);
    const tryOptions: TryLockOptions & AcquisitionOptions = {
      waitTime,
      leaseTime: options?.leaseTime,
      signal: options?.signal,
      metricName: options?.metricName,
      [SKIPS_IF_LOCKED]: skip,
    };
    acquiring = lock.tryLock(tryOptions);
  } catch (error) {
    return Promise.reject(error);
  }
  // A plain promise chain, not an async function, while the acquisition waits: a waiting caller
  // keeps no suspended frame of its own here (thousands of waiters in one process add up).
  return acquiring.then(
    (acquired) => {
      if (acquired) return runHeld(engine, lock, fn, minHoldTime ? monotonicNow() + minHoldTime : 0);
      if (!skip) throw new LockTimeoutError(lock.runName, waitTime);
      // Someone else is doing the work: expected on every replica but one, so never above debug.
      engine.logger.debug(LOCK_SKIPPED(lock.runName, waitTime));
      return undefined;
    },
    (error: unknown) => {
      if (!skip || !(error instanceof LockShutdownError)) throw error;
      skippedAtShutdown(engine.logger, lock.runName);
      return undefined;
    },
  );
}

/**
 * A skipping call that meets the shutdown (a `@Cron` tick that fires while the app closes: Nest
 * stops the scheduler only after, or alongside, this module) does not run and is no error: this
 * replica is leaving, another one does the work. Without `skipIfLocked` it stays `LockShutdownError`.
 */
export function skippedAtShutdown(logger: Pick<LoggerService, 'debug'>, name: string | readonly string[]): undefined {
  logger.debug?.(LOCK_SKIPPED_AT_SHUTDOWN(name));
  return undefined;
}

/**
 * `fn` under the acquired `lock`, recorded in the owner context; the release once `fn` settled,
 * whatever it did. The run resolves with `fn`'s outcome as soon as `fn` settles: the release is
 * written to the command connection at that moment and not waited for (it cannot change the
 * outcome: a failed release is logged, never thrown), so a locked call costs one round trip.
 * Whatever this module sends next (another acquisition of the name, `isLocked()`, `inspect()`)
 * goes out after it on the same connection, and Redis runs one connection's commands in order, so
 * it sees the lock released. On a cluster the release and the next command on the same name go to
 * the slot's master on one connection too; only a slot that moves in between (a MOVED redirect)
 * can let the next command overtake a redirected release, and then an acquisition just waits for
 * the release's unlock message. See `docs/architecture.md#one-round-trip`.
 */
function runHeld<T>(
  engine: LockEngine,
  lock: RunnableLock,
  fn: (context: LockRunContext) => T | Promise<T>,
  /** `minHoldTime`: the lock stays held until this time (monotonic ms; 0: no minimum). */
  keepUntil: number,
): Promise<T> {
  let outcome: Promise<T>;
  let frame: OwnerFrame | undefined;
  // Counted while it runs: shutdown aborts its signal and gives it `shutdownTimeout` to end.
  engine.runningBodies.enter();
  try {
    // The same object is `fn`'s argument and the services' `current()` inside it.
    const context = lock.runContext();
    frame = engine.ownerContext.open(lock.heldLocks(), context);
    outcome = Promise.resolve(engine.ownerContext.runIn(frame, () => fn(context)));
  } catch (error) {
    outcome = Promise.reject(error);
  }
  // The frame ends with the body, before the release: what the body started and left running
  // (timers, handlers, promises nobody awaited) asks for the lock as a new owner from then on.
  return outcome.then(
    (value) => {
      frame?.end();
      engine.releasesInFlight.track(release(engine, lock, keepUntil));
      engine.runningBodies.leave();
      return value;
    },
    (error: unknown) => {
      frame?.end();
      engine.releasesInFlight.track(release(engine, lock, keepUntil));
      engine.runningBodies.leave();
      throw error;
    },
  );
}

/**
 * Releases a run's lock, or, before its `minHoldTime` ended, leaves it to expire then (whatever `fn`
 * did: a failed run of a job must not be repeated by a replica that runs late either). A failed
 * release is logged, never thrown (it must not hide `fn`'s outcome).
 */
function release(engine: LockEngine, lock: RunnableLock, keepUntil: number): Promise<void> {
  // A body that outlived the shutdown's `shutdownTimeout` (a job still running when the app
  // closes): the shutdown released every recorded hold, this one included, and closes the
  // connection after.
  if (engine.releasingAtShutdown) {
    engine.logger.debug(RELEASE_LEFT_TO_SHUTDOWN(String(lock.runName)));
    return Promise.resolve();
  }
  let releasing: Promise<void>;
  try {
    const keepMs = keepUntil - monotonicNow();
    releasing = keepMs > 0 ? lock.keepHeldFor(Math.ceil(keepMs)) : lock.unlock();
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
): Promise<T | undefined> {
  try {
    if (!Array.isArray(name)) return runLocked(engine, lockFor(name as string, undefined), fn, options);
    const owner = engine.ids.nextOwner();
    return runLocked(engine, new MultiLock(name.map((n: string) => lockFor(n, owner)), engine.telemetry), fn, options);
  } catch (error) {
    return Promise.reject(error);
  }
}
