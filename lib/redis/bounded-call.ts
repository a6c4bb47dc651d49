import { monotonicNow } from '../monotonic-clock';
import { conflictOf, LockError, LockUnavailableError, NoAnswerError } from '../errors';

/**
 * Handed to one Redis call: `expired` turns true when the caller stops waiting for it, so the call
 * sends nothing more on its own (no EVAL after a late NOSCRIPT that could grant a lock nobody waits
 * for any longer).
 */
export interface CallTicket {
  expired: boolean;
}

/** Whole seconds after which retrying a call bounded by `timeoutMs` makes sense. */
export const retryAfterSeconds = (timeoutMs: number): number => Math.max(1, Math.ceil(timeoutMs / 1000));

/**
 * A Redis or connection failure as the library reports it; its own errors pass through unchanged. A
 * key of the lock that holds something else (a script's refusal, or WRONGTYPE) is a
 * `LockNameConflictError` (409), not Redis being unavailable.
 */
export function asLockError(lockName: string | readonly string[], error: unknown, timeoutMs: number): Error {
  if (error instanceof LockError) return error;
  return conflictOf(lockName, error) ?? new LockUnavailableError(lockName, error, retryAfterSeconds(timeoutMs));
}

/** One call in flight: also its ticket. */
interface PendingCall extends CallTicket {
  readonly deadline: number;
  readonly lockName: string | readonly string[];
  /** Settles the call as unavailable (rejects it, or resolves with the error: see `boundedAttempt`). */
  readonly unavailable: (error: LockUnavailableError) => void;
}

/**
 * The calls in flight that share one timeout. Their deadlines come in the order the calls start, so
 * one timer armed for the oldest call's deadline bounds them all: a call costs a Set entry, not a
 * timer of its own (measurably cheaper on the uncontended path).
 */
class CallDeadlines {
  private readonly inFlight = new Set<PendingCall>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly timeoutMs: number) {}

  start(call: PendingCall): void {
    this.inFlight.add(call);
    this.timer ??= this.arm(this.timeoutMs);
  }

  settle(call: PendingCall): void {
    this.inFlight.delete(call);
  }

  private arm(ms: number): NodeJS.Timeout {
    const timer = setTimeout(() => this.sweep(), ms);
    timer.unref(); // a call in flight keeps its connection (and so the process) busy anyway
    return timer;
  }

  /** Expires the calls whose deadline passed (the oldest first), then waits for the next one's. */
  private sweep(): void {
    this.timer = undefined;
    const now = monotonicNow();
    for (const call of this.inFlight) {
      if (call.deadline > now) {
        this.timer = this.arm(call.deadline - now);
        return;
      }
      this.inFlight.delete(call);
      call.expired = true;
      call.unavailable(new LockUnavailableError(call.lockName, new NoAnswerError(this.timeoutMs), retryAfterSeconds(this.timeoutMs)));
    }
  }
}

const deadlinesByTimeout = new Map<number, CallDeadlines>();

/**
 * Waits at most `timeoutMs` for `call`, whatever the client's own settings: a frozen server, a
 * dropped reply or a client that queues commands while disconnected all end in a
 * `LockUnavailableError` (with the Redis error, or "no answer within N ms", as `cause`).
 */
export function boundedCall<T>(
  lockName: string | readonly string[],
  timeoutMs: number,
  call: (ticket: CallTicket) => Promise<T>,
): Promise<T> {
  return bounded(lockName, timeoutMs, call, false) as Promise<T>;
}

/**
 * `boundedCall` for an acquisition attempt, whose waiting loop takes "Redis could not be asked" as
 * an outcome like "busy": resolves with the `LockUnavailableError` instead of rejecting (one promise
 * less per attempt than catching it). Other errors still reject.
 */
export function boundedAttempt<T>(
  lockName: string | readonly string[],
  timeoutMs: number,
  call: (ticket: CallTicket) => Promise<T>,
): Promise<T | LockUnavailableError> {
  return bounded(lockName, timeoutMs, call, true);
}

function bounded<T>(
  lockName: string | readonly string[],
  timeoutMs: number,
  call: (ticket: CallTicket) => Promise<T>,
  unavailableAsValue: boolean,
): Promise<T | LockUnavailableError> {
  let deadlines = deadlinesByTimeout.get(timeoutMs);
  if (!deadlines) deadlinesByTimeout.set(timeoutMs, (deadlines = new CallDeadlines(timeoutMs)));
  const tracker = deadlines;
  return new Promise<T | LockUnavailableError>((resolve, reject) => {
    const pending: PendingCall = { deadline: monotonicNow() + timeoutMs, lockName, unavailable: unavailableAsValue ? resolve : reject, expired: false };
    tracker.start(pending);
    let work: Promise<T>;
    try {
      work = call(pending);
    } catch (error) {
      work = Promise.reject(error);
    }
    work.then(
      (value) => {
        if (pending.expired) return;
        tracker.settle(pending);
        resolve(value);
      },
      (error: unknown) => {
        if (pending.expired) return;
        tracker.settle(pending);
        pending.expired = true;
        const failure = asLockError(lockName, error, timeoutMs);
        if (failure instanceof LockUnavailableError) pending.unavailable(failure);
        else reject(failure);
      },
    );
  });
}

/** `work`, or a rejection with "no answer within `ms` ms" if it has not settled by then. */
export function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new NoAnswerError(ms)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
