import type { LockAdapter } from '../adapters/adapter';
import type { Job } from '../harness/messages';
import type { ParentChannel } from '../harness/parent-channel';

/** What a worker process hands the task it runs. */
export interface WorkerContext {
  readonly job: Job;
  readonly parent: ParentChannel;
  /** The adapter of `job.adapter`, connected (undefined for the floors). */
  readonly adapter: LockAdapter | undefined;
}

export type ChildTask = (context: WorkerContext) => Promise<unknown>;

export function adapterOf(context: WorkerContext): LockAdapter {
  if (!context.adapter) throw new Error(`${context.job.task} needs an adapter`);
  return context.adapter;
}

export const noop = async (): Promise<void> => undefined;

/**
 * Runs `fn` under `key`; after each give-up of the library, `onGiveUp()` says whether to ask again
 * (resolves undefined when it says no). A promise chain rather than an async loop, so a waiting
 * caller of the workload costs little besides what the library keeps (W5x measures the heap of
 * 20,000 of them).
 */
export function runUntilAcquired<T>(
  adapter: LockAdapter,
  key: string,
  fn: () => Promise<T>,
  onGiveUp: () => boolean,
): Promise<T | undefined> {
  const ask = (): Promise<T | undefined> =>
    adapter.run(key, fn).catch((error: unknown) => {
      if (!adapter.gaveUp(error)) throw error;
      return onGiveUp() ? ask() : undefined;
    });
  return ask();
}
