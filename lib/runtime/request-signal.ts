import { AsyncLocalStorage } from 'node:async_hooks';

const storage = new AsyncLocalStorage<AbortSignal>();

/** The signal of the HTTP request being handled (aborted when its client disconnects), if any. */
export function requestSignal(): AbortSignal | undefined {
  return storage.getStore();
}

/** Runs `fn` (the route handler) with `signal` as the request's signal. */
export function runWithRequestSignal<T>(signal: AbortSignal, fn: () => T): T {
  return storage.run(signal, fn);
}
