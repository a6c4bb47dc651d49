import { monotonicNow } from '../monotonic-clock';
import { sleepDeadlines } from './sleep-deadlines';

/**
 * A lock handed to a waiter by a release (the releasing script granted it and named the waiter's
 * entry): its fencing token, the send stamp of the waiter's last attempt that reached Redis before
 * the grant (µs on the waiter's monotonic clock, echoed by Redis; undefined when Redis had none), how
 * long after that attempt reached Redis the grant was made, and the lease the grant began with (the
 * last two as the server counted them). See docs/hand-off-protocol.md.
 */
export interface HandedGrant {
  readonly fencingToken: number | undefined;
  readonly attemptStamp: number | undefined;
  /** The proof of the join the grant was made to, as its attempts carried it. */
  readonly attemptProof: string | undefined;
  readonly sinceAttemptMs: number;
  readonly grantLeaseMs: number;
}

/** Told how a waiter's sleep ended (see `Waiter.sleepThen`). */
export interface Sleeper {
  /** Woken by a release, or the sleep's time is up. */
  woke(): void;
  /** The waiter was cancelled (an aborted signal, shutdown). */
  failed(error: Error): void;
}

/**
 * One waiter's seat on a channel. A wake that arrives while the waiter is busy retrying is kept
 * (`pendingWake`) so the next sleep ends at once: no release is missed between attempts. A
 * sleeping waiter costs its seat and its sleeper: no timer, promise or closure of its own.
 */
export class Waiter {
  pendingWake = false;
  /** A grant a release handed to this waiter, until the acquisition takes it (see `takeGrant`). */
  private handed: HandedGrant | undefined = undefined;
  /** The seats of one channel are a doubly linked list: leaving is O(1) with any number of waiters. */
  prev: Waiter | undefined = undefined;
  next: Waiter | undefined = undefined;
  /** While sleeping: when the sleep ends at the latest, and the waiter's place in the deadline heap. */
  wakeAt = 0;
  heapIndex = -1;
  private sleeper: Sleeper | undefined;
  /** Rejects the bounded wait of `waitFor` in progress. */
  private fail: ((error: Error) => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private cancelledWith: Error | undefined;

  constructor(
    readonly channel: string,
    /**
     * Set for a waiter that a message can name: its line entry (a new one for each join of the
     * line), or a semaphore waiter's permit id.
     */
    public id?: string,
  ) {}

  get sleeping(): boolean {
    return this.sleeper !== undefined;
  }

  /**
   * Sleeps until a wake or for `ms`, whichever is first, then tells `sleeper` (at once when a wake
   * is already pending or the waiter was cancelled).
   */
  sleepThen(ms: number, sleeper: Sleeper): void {
    if (this.cancelledWith) return sleeper.failed(this.cancelledWith);
    if (this.pendingWake) {
      this.pendingWake = false;
      return sleeper.woke();
    }
    this.sleeper = sleeper;
    this.wakeAt = monotonicNow() + ms;
    sleepDeadlines.add(this);
  }

  /** Resolves on a wake or after `ms`, whichever is first. */
  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve, reject) => this.sleepThen(ms, { woke: resolve, failed: reject }));
  }

  /** The sleep's deadline passed (called by the shared deadline timer). */
  deadlinePassed(): void {
    this.settle();
  }

  /**
   * Resolves with `work`'s outcome, or `fallback` after `ms`; rejects if the waiter is cancelled
   * meanwhile. A wake that arrives meanwhile is kept for the next `sleep`.
   */
  waitFor<T>(work: Promise<T>, ms: number, fallback: T): Promise<T> {
    if (this.cancelledWith) return Promise.reject(this.cancelledWith);
    return new Promise<T>((resolve, reject) => {
      const done = (value: T): void => {
        if (this.fail !== reject) return;
        clearTimeout(this.timer);
        this.fail = this.timer = undefined;
        resolve(value);
      };
      this.fail = reject;
      this.timer = setTimeout(() => done(fallback), ms);
      work.then(done, () => done(fallback));
    });
  }

  /**
   * The waiter ahead was handed the lock on a grant lease of `ms`: a sleep that would last longer
   * ends then instead (if that waiter died, the lock is free again, and this one must ask). An
   * attempt in flight needs nothing: its answer bounds the next sleep.
   */
  wakeWithin(ms: number): void {
    if (!this.sleeper) return;
    const at = monotonicNow() + ms;
    if (at >= this.wakeAt) return;
    sleepDeadlines.remove(this);
    this.wakeAt = at;
    sleepDeadlines.add(this);
  }

  /** A release handed the lock to this waiter: kept for its acquisition, which is woken to take it. */
  handOver(grant: HandedGrant): void {
    this.handed = grant;
    this.wake();
  }

  /** The grant a release handed to this waiter, once (undefined when none came). */
  takeGrant(): HandedGrant | undefined {
    const grant = this.handed;
    this.handed = undefined;
    return grant;
  }

  wake(): void {
    if (this.sleeper) this.settle();
    else this.pendingWake = true;
  }

  /** Ends the current sleep or bounded wait with `error`, or the next one if the waiter is busy retrying. */
  cancel(error: Error): void {
    this.cancelledWith = error;
    const { sleeper, fail } = this;
    clearTimeout(this.timer);
    sleepDeadlines.remove(this);
    this.sleeper = this.fail = this.timer = undefined;
    sleeper?.failed(error);
    fail?.(error);
  }

  private settle(): void {
    clearTimeout(this.timer);
    sleepDeadlines.remove(this);
    const sleeper = this.sleeper;
    this.sleeper = this.fail = this.timer = undefined;
    sleeper?.woke();
  }
}
