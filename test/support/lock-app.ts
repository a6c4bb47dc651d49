import { Test, TestingModule } from '@nestjs/testing';
import { LockModule, LockModuleOptions } from '../../lib';
import { LockEngine } from '../../lib/runtime/lock-engine';

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

/** Polls `condition` until it holds or `timeoutMs` passes (a generous upper bound against hangs). */
export async function waitUntil(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000, stepMs = 10): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A promise with its resolve function, to hold a critical section open until the test says so. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Resolves once `count` callers of this module wait on its subscriber (subscribed, between attempts). */
export function waitersQueued(moduleRef: TestingModule, count = 1, channel?: string): Promise<void> {
  const subscriber = moduleRef.get(LockEngine).subscriber;
  return waitUntil(() => subscriber.waiterCount(channel) >= count);
}
