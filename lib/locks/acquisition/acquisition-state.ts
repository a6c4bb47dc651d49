import { LockUnavailableError } from '../../errors';
import type { Waiter } from '../../redis/waiter';
import type { Cancellation } from '../../runtime/cancellation';
import { monotonicNow } from '../../monotonic-clock';
import type { LockOptions } from '../lock';
import { frameAtStart, type WaitNode } from '../../deadlocks/wait-node';
import { waitForGraph } from '../../deadlocks/wait-for-graph';
import { SKIPS_IF_LOCKED, type AcquisitionOptions } from '../../metrics/lock-telemetry';
import type { OwnerFrame } from '../../runtime/owner-context';
import type { Contender } from './contender';

/**
 * What one acquisition knows (see `Acquisition`, its attempt loop, in acquisition.ts): its seat, its
 * latest attempt and answer, its place in the lock's line, its deadline and its promise; and how it
 * ends, once, cleaning up behind it. One object per acquisition: the layers over it (deadlock-wait.ts,
 * grant-delivery.ts, acquisition.ts) add behaviour, never state.
 */
export abstract class AcquisitionState<R> {
  /** The seat, taken when an attempt finds the lock busy (or before the first, when queueing). */
  protected waiter: Waiter | undefined = undefined;
  /** The last missed attempt: the lock's TTL, or Redis could not be asked. */
  protected outcome: number | LockUnavailableError | undefined = undefined;
  /** Set once an attempt's outcome is unknown (no answer in time): it may still be granted later. */
  protected outcomeUnknown = false;
  /** Attempts in a row that could not reach Redis (paces the retries). */
  protected failures = 0;
  /** Attempts in a row that found the lock busy without a TTL (paces the retries). */
  protected busyWithoutTtl = 0;
  /** When the latest attempt was sent (monotonic ms): a grant's lease runs from then. */
  protected sentAt = 0;
  /** The same moment as the attempt's stamp (whole µs, rounded down), which Redis echoes in a grant message. */
  protected sentStamp = 0;
  /**
   * The stamp of the latest attempt Redis answered (busy or granted). A grant message that names
   * an older attempt was made before this one reached Redis, and this one did not find it: that
   * grant had ended (given back, expired). See docs/hand-off-protocol.md.
   */
  protected answeredStamp = 0;
  /** How many times this acquisition joined the line anew after giving a late grant back. */
  protected join = 0;
  /**
   * A random value of this join, sent with its attempts and echoed only by the grant message for
   * it: a message that does not carry it (forged by a client that may publish on the lock's
   * channels but cannot read its keys, or meant for another join) is not taken.
   */
  protected joinProof: string | undefined = undefined;
  /** This acquisition's entry in the lock's line (the id a hand-over names), once it takes a seat. */
  protected lineEntry: string | undefined = undefined;
  /** Whether an attempt that joins the lock's line has been sent. */
  protected joinedLine = false;
  /** Whether wake messages can be counted on (a contender that is not woken by them never needs any). */
  protected subscribed: boolean;
  protected acquired = false;
  protected ended = false;
  /** When the acquisition began (monotonic ms), for the contention counters of one that waited. */
  protected readonly startedAt = monotonicNow();
  /** Whether an attempt found the lock busy: only then is the acquisition counted as contention. */
  protected foundBusy = false;
  protected readonly deadline: number;
  /** This acquisition's request id: a release that undoes its late grant names it. */
  protected readonly requestId: string;
  /** The call chain's innermost body when the acquisition began (its holds wait for this one). */
  protected readonly frame: OwnerFrame | undefined;
  /** This wait in the deadlock check's graph, from its first miss to its end (docs/deadlocks.md). */
  protected waitNode: WaitNode | undefined = undefined;
  /** Whether the latest attempt sent joined (or kept a place in) the lock's line. */
  protected lastSentJoined = false;
  /** Set when the wait was refused as a deadlock: a grant still on its way is given back. */
  protected refusal: Error | undefined = undefined;
  protected resolve!: (result: R) => void;
  protected reject!: (error: unknown) => void;
  readonly settled: Promise<R>;

  protected constructor(
    protected readonly contender: Contender<R>,
    protected readonly leaseMs: number,
    protected readonly waitMs: number,
    /** What the acquisition resolves with when the wait ends while the lock stays busy. */
    protected readonly busyResult: R,
    protected readonly options: LockOptions | undefined,
    protected readonly cancellation: Cancellation | undefined,
  ) {
    this.deadline = monotonicNow() + waitMs;
    this.subscribed = !contender.wakesOnRelease;
    this.requestId = contender.engine.ids.nextRequest();
    this.frame = waitMs > 0 ? frameAtStart() : undefined;
    this.settled = new Promise<R>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /** Counts this acquisition, which found the lock busy, in its instance's contention (the lock board's plots). */
  protected countContention(failed: boolean): void {
    const { contender } = this;
    const end =
      this.acquired && !failed
        ? 'acquired'
        : failed
          ? 'other'
          : (this.options as AcquisitionOptions | undefined)?.[SKIPS_IF_LOCKED]
            ? 'skipped'
            : 'timeout';
    contender.engine.contention.waited(contender.name, monotonicNow() - this.startedAt, end);
  }

  /** The wait is over without the lock: the busy result after "busy", the error when Redis could not be asked. */
  protected endWithoutLock(): void {
    const { outcome } = this;
    if (outcome instanceof LockUnavailableError) this.end(true, outcome);
    else this.end(false, this.busyResult);
  }

  /**
   * Ends the acquisition once: leaves the seat; without the lock, cleans up behind it (leave the
   * line, undo a late grant: waited for unless Redis is unreachable, so the acquisition still
   * settles within its bound); then resolves with `result`, or rejects with it when `failed`.
   */
  protected end(failed: boolean, result: unknown): void {
    if (this.ended) return;
    this.ended = true;
    const { waiter, acquired, contender, waitNode } = this;
    if (waitNode) {
      waitForGraph.remove(waitNode);
      contender.engine.deadlocks.unwatch(waitNode);
    }
    if (waiter) contender.room.leave(waiter, acquired);
    if (this.foundBusy) {
      try {
        this.countContention(failed);
      } catch {
        // A count for the lock board never stands between an acquisition and its outcome.
      }
    }
    const settle = (): void => {
      if (failed) this.reject(result);
      else this.resolve(result as R);
    };
    if (acquired) return settle();
    const unreachable = this.outcome instanceof LockUnavailableError;
    // Any attempt with a wait may have joined a Redis line (fair lock, semaphore), seated or not.
    // An attempt that joined a line may have gone out before any seat was taken (a fair first attempt).
    const lineEntry = this.lineEntry ?? (this.waitMs > 0 ? contender.lineEntry?.(this.requestId, this.leaseMs, this.join) : undefined);
    const cleaning = contender.abandon(this.requestId, this.waitMs > 0, this.outcomeUnknown, lineEntry);
    if (cleaning && !unreachable) cleaning.then(settle, settle);
    else settle();
  }
}
