/**
 * The cancellation of one pending acquisition, fed by the caller's `AbortSignal`: the acquisition
 * promise rejects at once with the signal's reason (see `cancellable`), while the waiting loop,
 * told through `onCancel`, leaves its seat, its subscription and its fair-line place, and lets go
 * of a grant that arrives too late.
 */
export class Cancellation {
  cancelled = false;
  reason: unknown;
  private readonly listeners: Array<(reason: unknown) => void> = [];

  cancel(reason: unknown): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.reason = reason;
    for (const listener of this.listeners.splice(0)) listener(reason);
  }

  /** Calls `listener` on cancellation (at once if already cancelled). */
  onCancel(listener: (reason: unknown) => void): void {
    if (this.cancelled) listener(this.reason);
    else this.listeners.push(listener);
  }

  throwIfCancelled(): void {
    if (this.cancelled) throw this.reason;
  }
}

/** The signal's reason as an Error for APIs that reject with one (a reason may be any value). */
export function reasonAsError(reason: unknown): Error {
  return reason instanceof Error ? reason : Object.assign(new Error(String(reason)), { reason });
}

/**
 * Runs `work` so that aborting `signal` rejects the returned promise at once with the signal's
 * reason; `work` sees the cancellation and cleans up behind it (its later outcome is ignored).
 * Without a signal, `work` runs as is.
 */
export function cancellable<T>(signal: AbortSignal | undefined, work: (cancellation: Cancellation | undefined) => Promise<T>): Promise<T> {
  if (!signal) return work(undefined);
  if (signal.aborted) return Promise.reject(signal.reason);
  const cancellation = new Cancellation();
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      cancellation.cancel(signal.reason);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work(cancellation)
      .then(resolve, reject)
      .finally(() => signal.removeEventListener('abort', onAbort));
  });
}
