import { randomBytes } from 'node:crypto';
import { conflictOf, LockShutdownError, LockUnavailableError } from '../../errors';
import type { Sleeper, Waiter } from '../../redis/waiter';
import { reasonAsError, type Cancellation } from '../../runtime/cancellation';
import { monotonicNow } from '../../monotonic-clock';
import { checkAcquireTimes } from '../../validators';
import type { LockOptions } from '../lock';
import { isGrant, type AttemptOutcome, type Contender } from './contender';
import { GrantDelivery } from './grant-delivery';
import { sleepAfterMissMs } from './pacing';

/**
 * One acquisition of one lock, whatever its kind, from its first attempt to its end: attempt; when
 * busy, take a seat where releases wake it, try again once subscribed, then sleep until a wake, the
 * lock's TTL or the deadline, and try again; on a grant confirm it on the replicas (when asked) and
 * record it; on giving up leave the line and undo a grant that may come late.
 *
 * A small state object driven by callbacks (the attempts' promises, and the waiter's sleep with
 * this object as its sleeper) rather than a suspended async function: a sleeping waiter keeps only
 * this, its seat and its promise, and 20,000 waiters in one process add up. The promise `settled`
 * is the one callers get (no adoption). Every bound lives here: an acquisition settles by its
 * wait plus at most one `commandTimeout` (plus `syncReplicasTimeout` when confirming replicas).
 *
 * The machine's layers: its state and its end (acquisition-state.ts), the deadlock check of its
 * wait (deadlock-wait.ts), a grant's way to the caller or back (grant-delivery.ts), and here the
 * attempts and the wait between them; what a kind supplies is its `Contender` (contender.ts).
 */
export class Acquisition<R> extends GrantDelivery<R> implements Sleeper {
  private constructor(
    contender: Contender<R>,
    leaseMs: number,
    waitMs: number,
    busyResult: R,
    options: LockOptions | undefined,
    cancellation: Cancellation | undefined,
  ) {
    super(contender, leaseMs, waitMs, busyResult, options, cancellation);
    if (waitMs > 0 && contender.seatsFirst()) this.takeSeat();
    else this.firstAttempt();
  }

  /**
   * Starts an acquisition of `contender` within `waitMs` (Infinity: no limit), after checking its
   * times; resolves with what the contender's `held` returns, or `busyResult` when the lock stayed
   * busy; rejects with `LockUnavailableError` when the last attempt could not reach Redis, with
   * `LockShutdownError` when the module's shutdown began before or during the wait. Settles
   * by `waitMs` plus at most one `commandTimeout`. Never throws: bad input rejects.
   */
  static start<R>(
    contender: Contender<R>,
    waitMs: number,
    busyResult: R,
    options: LockOptions | undefined,
    cancellation: Cancellation | undefined,
  ): Promise<R> {
    try {
      // Whole milliseconds, rounded up (Redis refuses a fractional PEXPIRE after the hold is written).
      const times = checkAcquireTimes(waitMs, options?.leaseTime);
      // Asked once the shutdown began (a scheduler's tick before the scheduler stopped): the
      // connection is about to close, and nobody would release a grant.
      if (contender.engine.shuttingDown) return Promise.reject(new LockShutdownError(contender.name));
      const leaseMs = times.leaseTime ?? contender.engine.options.watchdogTimeout;
      return new Acquisition<R>(contender, leaseMs, times.waitMs, busyResult, options, cancellation).settled;
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Woken by a release, or the sleep's time is up: the next round. */
  woke(): void {
    this.round();
  }

  /** The waiter was cancelled (an aborted signal, shutdown). */
  failed(error: Error): void {
    this.end(true, error);
  }

  /** The first attempt; a single attempt (waitTime 0) never joins a Redis line. */
  private firstAttempt(): void {
    this.joinedLine = this.waitMs > 0 && this.contender.joinsLineOnFirstAttempt !== false;
    this.send(this.joinedLine)
      .then((outcome) => {
        if (isGrant(outcome)) return this.granted(outcome);
        if (!this.missed(outcome)) return;
        // waitTime 0 is one attempt; an attempt that used up the wait (Redis did not answer) ends it.
        if (this.waitMs <= 0 || (outcome instanceof LockUnavailableError && monotonicNow() >= this.deadline)) return this.endWithoutLock();
        this.takeSeat();
      })
      .then(undefined, (error: unknown) => this.end(true, error));
  }

  /** Takes a seat where releases wake this contender, then the first round. */
  protected override takeSeat(): void {
    const { room, waitChannel, sharedChannel, waiterId, wakesOnRelease } = this.contender;
    let waiter: Waiter;
    try {
      this.lineEntry = this.contender.lineEntry?.(this.requestId, this.leaseMs, this.join);
      waiter = room.seat(waitChannel, this.lineEntry ?? waiterId, sharedChannel);
    } catch (error) {
      return this.end(true, error);
    }
    this.waiter = waiter;
    // Aborting frees the seat at once (the caller's promise has rejected already) and wakes the
    // waiter with the reason: a step in flight ends the wait (leaving the line) when it returns.
    this.cancellation?.onCancel((reason) => {
      room.leave(waiter, false);
      waiter.cancel(reasonAsError(reason));
    });
    if (wakesOnRelease) this.round();
    else this.sleep();
  }

  /**
   * One round of the wait: take a lock a release handed over, or make sure (bounded) the seat is
   * subscribed, attempt, then sleep or end.
   */
  protected override round(): void {
    const waiter = this.waiter as Waiter;
    const handed = this.takeHanded();
    // With `syncReplicas` the handed lock is taken by an attempt instead (it finds the grant): WAIT
    // then covers a write of this connection's that follows the grant. So is one whose message
    // cannot date it ('attempt').
    if (handed && handed !== 'attempt' && !this.confirmsOnReplicas) return this.handedOver(handed);
    const { room, engine, wakesOnRelease } = this.contender;
    if (wakesOnRelease && !this.joinedLine && this.lineEntry !== undefined && !room.isSubscribed?.(waiter)) {
      return this.joinLineWhileSubscribing();
    }
    const subscribing = wakesOnRelease
      ? room.subscribed(waiter, Math.min(engine.options.commandTimeout, this.deadline - monotonicNow()))
      : Promise.resolve(true);
    subscribing
      .then((subscribed) => {
        this.subscribed = subscribed;
        this.joinedLine = true;
        return this.send(true).then((outcome) => this.afterAttempt(outcome));
      })
      .then(undefined, (error: unknown) => this.end(true, error));
  }

  /**
   * A waiter whose channel is not subscribed yet joins the lock's line at once, while its
   * subscription is being confirmed (a cluster's shard, a loaded machine may take a while, and a
   * looping holder would take the lock meanwhile); then the usual round: subscribed, attempt again
   * (it finds a grant made before it could hear of it), sleep.
   */
  private joinLineWhileSubscribing(): void {
    this.joinedLine = true;
    this.send(true)
      .then((outcome) => {
        if (isGrant(outcome)) return this.granted(outcome);
        if (!this.missed(outcome)) return;
        if (this.deadline - monotonicNow() <= 0) return this.endWithoutLock();
        this.round();
      })
      .then(undefined, (error: unknown) => this.end(true, error));
  }

  /**
   * Sends one attempt, stamped with its send time; once Redis answered it (busy or granted), grant
   * messages naming an earlier attempt are stale (`takeHanded`). An attempt of a line waiter whose
   * seat is subscribed says so (' s'): Redis may then judge its entry by whether its channel is
   * heard (a dead process's is not, lua/include/line-seat-heard.lua); a newcomer that joins before
   * subscribing never says so, and is never judged that way (docs/hand-off-protocol.md#dead-waiters).
   */
  private send(joinLine: boolean): Promise<AttemptOutcome> {
    const sentAt = monotonicNow();
    const stamp = Math.floor(sentAt * 1000);
    this.sentAt = sentAt;
    this.sentStamp = stamp;
    this.lastSentJoined = joinLine;
    const { waiter, lineEntry } = this;
    const seated = waiter !== undefined && lineEntry !== undefined && this.contender.room.isSubscribed?.(waiter) === true;
    const token = joinLine ? `${stamp}.${(this.joinProof ??= randomBytes(8).toString('hex'))}${seated ? ' s' : ''}` : '';
    return this.contender.attempt(this.leaseMs, this.requestId, joinLine, token, this.join).then((outcome) => {
      if (!(outcome instanceof LockUnavailableError)) {
        if (stamp > this.answeredStamp) this.answeredStamp = stamp;
        return outcome;
      }
      // A key of the lock holds something else (a RedLock's masters answer it as their failure):
      // not an outage to wait out, but a LockNameConflictError (409) that ends the acquisition.
      const conflict = conflictOf(this.contender.name, outcome.cause);
      if (conflict) throw conflict;
      return outcome;
    });
  }

  private afterAttempt(outcome: AttemptOutcome): void {
    if (isGrant(outcome)) return this.granted(outcome);
    if (!this.missed(outcome)) return;
    // A release may have handed the lock over while this attempt was out: take it.
    const handed = this.takeHanded();
    if (handed) return this.confirmsOnReplicas || handed === 'attempt' ? this.round() : this.handedOver(handed);
    if (this.deadline - monotonicNow() <= 0) return this.endWithoutLock();
    this.sleep();
  }

  /**
   * Notes an attempt that did not grant: "busy" (the TTL), or Redis could not be asked. False when
   * the caller cancelled meanwhile (the acquisition has ended).
   */
  private missed(outcome: number | LockUnavailableError): boolean {
    if (this.ended) return false;
    this.outcome = outcome;
    if (outcome instanceof LockUnavailableError) {
      this.outcomeUnknown = true;
      this.failures += 1;
    } else {
      this.failures = 0;
      this.foundBusy = true;
      this.busyWithoutTtl = outcome < 0 ? this.busyWithoutTtl + 1 : 0;
    }
    const { cancellation } = this;
    if (cancellation?.cancelled) {
      this.end(true, cancellation.reason);
      return false;
    }
    if (typeof outcome === 'number' && this.waitMs > 0) this.waiting();
    return !this.ended;
  }

  /**
   * Sleeps until a wake or the next attempt is due. A missed message never stalls a waiter: every
   * sleep ends by the lock's TTL or the deadline; without Redis (or without a subscription yet) it
   * retries at a gentle pace.
   */
  private sleep(): void {
    const remaining = this.deadline - monotonicNow();
    const sleepMs = sleepAfterMissMs(this.outcome, this.failures, this.busyWithoutTtl, this.subscribed, remaining, this.contender.maxSleepMs);
    (this.waiter as Waiter).sleepThen(sleepMs, this);
  }
}
