import { Test, TestingModule } from '@nestjs/testing';
import { LockModule, LockModuleOptions } from '../../lib';
import { LockEngine } from '../../lib/engine/lock-engine';
import { waitFor } from './wait-for';

/** A Nest application context with LockModule, as a user would build one. */
export async function createLockApp(options: LockModuleOptions, extraProviders: any[] = []): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({
    imports: [LockModule.forRoot(options)],
    providers: extraProviders,
  }).compile();
  moduleRef.useLogger(false);
  await moduleRef.init();
  return moduleRef;
}

/**
 * Polls `condition` until it holds or `timeoutMs` passes (a generous upper bound against hangs).
 * New code: `waitFor` from './wait-for', which names what it waited for when it gives up.
 */
export function waitUntil(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000, stepMs = 10): Promise<void> {
  return waitFor(condition, { what: 'a condition', timeoutMs, stepMs });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A promise with its resolve function, to hold a critical section open until the test says so. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * Resolves once `count` callers of this module wait on its subscriber, each asleep between two
 * attempts: a caller only seated may still make the attempt that follows its subscription.
 */
export function waitersQueued(moduleRef: TestingModule, count = 1, channel?: string): Promise<void> {
  const subscriber = moduleRef.get(LockEngine).subscriber;
  return waitFor(() => subscriber.sleepingCount(channel) >= count, { what: `${count} local waiter(s) asleep on ${channel ?? 'any channel'}` });
}

/**
 * Waits until none of `keys` exists on `raw`: a locked call resolves with its body and sends its
 * release without waiting, so another connection may still see the lock for a moment.
 */
export function released(raw: { exists(...keys: string[]): Promise<number> }, ...keys: string[]): Promise<void> {
  return waitFor(async () => (await raw.exists(...keys)) === 0, { what: `${keys.join(', ')} released`, timeoutMs: 5_000 });
}

/** Resolves once the releases `moduleRef`'s runs sent without waiting have been answered. */
export function releasesSettled(moduleRef: TestingModule): Promise<void> {
  return moduleRef.get(LockEngine).releasesInFlight.settle(10_000);
}
