import { randomBytes } from 'node:crypto';
import { conflictOf, LockError, LockShutdownError, LockUnavailableError } from '../errors';
import { NOT_CONNECTED, REPLICAS_NOT_SYNCED } from '../lock.messages';
import { boundedCall, type CallTicket } from '../redis/bounded-call';
import { waitForReplicas } from '../redis/replica-sync';
import type { HandedGrant, Sleeper, Waiter } from '../redis/waiter';
import { reasonAsError, type Cancellation } from '../runtime/cancellation';
import type { LockEngine } from '../engine/lock-engine';
import { isDown } from '../redis/redis-client';
import { leaseDriftMs } from '../runtime/held-locks';
import { monotonicNow } from '../monotonic-clock';
import { checkAcquireTimes } from '../validators';
import type { LockOptions } from './lock';
import { chainHolds, frameAtStart, HOLDS_ALSO_WAITING, nextLineSeq, WaitNode, type WaitTarget } from '../deadlocks/wait-node';
import { cycleFrom, waitForGraph, youngestOf } from '../deadlocks/wait-for-graph';
import { LockDeadlockError } from '../errors';
import { SKIPS_IF_LOCKED, type AcquisitionOptions } from '../metrics/lock-telemetry';
import type { OwnerFrame } from '../runtime/owner-context';
import type { HeldLock } from '../runtime/held-locks';

/**
 * A granted attempt: its fencing token (none for a read lock), and when its lease began (monotonic
 * ms) when that is not when the attempt was sent (a RedLock's lease begins with its first master).
 */
export interface Grant {
  readonly fencingToken: number | undefined;
  readonly leaseStartedAt?: number;
  /**
   * The lease the grant began with, when shorter than the one asked for: a lock a release handed to
   * this waiter (its holder makes it the full lease once it hears of it).
   */
  readonly grantedLeaseMs?: number;
  /**
   * A read-write lock's read grant to an owner that holds the write lock too (a downgrade): the write
   * hold's fencing token (0 when Redis has none for it). Absent: Redis says the owner is no writer.
   */
  readonly writerFence?: number;
  /**
   * A read grant's episode: when its owner's read hold began in Redis (its `since:<owner id>`); a
   * later episode of the same owner (after the hold ended in Redis) has another one.
   */
  readonly readEpisode?: string;
}

/**
 * One attempt as the machine sees it: a grant, how long the lock may stay busy (ms), or Redis could
 * not be asked (its outcome unknown: it may still be granted later).
 */
export type AttemptOutcome = Grant | number | LockUnavailableError;

/** A handed grant whose message names the attempt it follows (see `Acquisition.takeHanded`). */
type DatedGrant = HandedGrant & { readonly attemptStamp: number };

const isGrant = (outcome: AttemptOutcome): outcome is Grant => typeof outcome === 'object' && !(outcome instanceof LockUnavailableError);

/**
 * Pause after the n-th attempt in a row that could not reach Redis, or that found the lock busy
 * with no TTL to wait for (a key left without one): 50 ms doubling up to 1 s.
 */
const backOffMs = (failures: number): number => Math.min(1_000, 50 * 2 ** Math.min(failures - 1, 5));

/**
 * Where waiters sit between attempts: the shared unlock subscriber (a release message wakes them),
 * or a room without messages (a RedLock, whose waiters retry after a pause).
 */
export interface WaitRoom {
  seat(channel: string, id?: string, shared?: string): Waiter;
  /** Gives up the seat; `acquired` false passes the head's turn on (see `UnlockSubscriber.leave`). */
  leave(waiter: Waiter, acquired: boolean): void;
  /** Whether wake messages for `waiter` can be counted on, waiting at most `ms` for a subscription. */
  subscribed(waiter: Waiter, ms: number): Promise<boolean>;
  /** Whether `waiter`'s channel is subscribed right now (no waiting). */
  isSubscribed?(waiter: Waiter): boolean;
}

/**
 * What a lock kind supplies to an acquisition: its attempt, where it waits, how it records a grant
 * and how it undoes one. The machine (`Acquisition`) does the rest the same way for every kind.
 */
export interface Contender<R> {
  readonly name: string;
  readonly engine: LockEngine;
  readonly room: WaitRoom;
  /** The channel whose messages wake this contender, and its id there (for messages naming waiters). */
  readonly waitChannel: string;
  /**
   * The lock's own channel, when `waitChannel` is this process's channel for the lock: its messages
   * (releases nobody in line waits for, an older version's releases and grants) wake the same seats.
   */
  readonly sharedChannel?: string;
  readonly waiterId?: string;
  /**
   * This acquisition's entry in the lock's line in Redis, for a kind whose releases hand the lock to
   * the first waiter in line (its id on the channel too: the grant message names it). Undefined: the
   * kind has no such line.
   */
  lineEntry?(requestId: string, leaseMs: number, join: number): string;
  /**
   * False when an acquisition that waits does not join a Redis line with its first attempt, only
   * with the attempts after it took its seat (a plain lock: its first attempt stays the small one).
   */
  readonly joinsLineOnFirstAttempt?: boolean;
  /**
   * True when a release message wakes this contender: once seated it tries again as soon as it is
   * subscribed (a release may have come before the subscription). False: it only sleeps and retries.
   */
  readonly wakesOnRelease: boolean;
  /** Longest sleep between attempts (a waiter in a Redis line must refresh its place). */
  readonly maxSleepMs: number;
  /** The key whose write `syncReplicas` waits for; none: no replica confirmation. */
  readonly replicaKey: string | undefined;
  /**
   * One atomic attempt, bounded by `commandTimeout`; Redis failures come back as a value.
   * `attemptStamp`: when it is sent (µs, monotonic) and the join's proof (`<µs>.<proof>`), kept by
   * Redis with the waiter's place in line and echoed by the grant message that admits it
   * (docs/hand-off-protocol.md). `join`: which of
   * the acquisition's joins of the line the attempt belongs to (its entry is `lineEntry(.., join)`).
   */
  attempt(leaseMs: number, requestId: string, joinLine: boolean, attemptStamp: string, join: number): Promise<AttemptOutcome>;
  /**
   * Whether a newcomer with a wait takes its seat before its first attempt (it still attempts, once
   * subscribed): where a release names the waiters it admits, the seat must be there when the name
   * comes, and the usual second attempt after seating is saved.
   */
  seatsFirst(): boolean;
  /**
   * Records the grant as held, its lease running from `grantSentAt` (monotonic ms: when the granted
   * attempt was sent); what the acquisition resolves with.
   */
  held(grant: Grant, leaseMs: number, options: LockOptions | undefined, grantSentAt: number): R;
  /**
   * Gives back the grant made to `requestId` that nobody will use (the caller cancelled, the replicas
   * did not confirm it, it was heard after its lease ended): only that request's hold, never one
   * another acquisition of the same owner made meanwhile.
   */
  undoGrant(requestId: string): Promise<unknown>;
  /**
   * Clean-up of an acquisition that ends without the lock: leave a Redis line (`joinedLine`) and undo
   * what an attempt with an unknown outcome may have granted (`requestId`). Resolves when what must
   * be waited for is done (nothing: `undefined`).
   */
  abandon(requestId: string, joinedLine: boolean, outcomeUnknown: boolean, lineEntry?: string): Promise<unknown> | undefined;
  /** What a wait waits for, for the deadlock check (docs/deadlocks.md); none: never checked. */
  readonly waitTarget?: WaitTarget;
}

/**
 * One attempt on the module's connection, bounded by `commandTimeout`; "Redis could not be asked"
 * comes back as a `LockUnavailableError` value. While the connection is between reconnects nothing
 * is sent (ioredis would queue it, to run who knows when): the attempt is "unavailable" at once and
 * the wait retries when the connection is back.
 */
export function attemptOnConnection(
  engine: LockEngine,
  name: string,
  work: (ticket: CallTicket) => Promise<AttemptOutcome>,
): Promise<AttemptOutcome> {
  if (isDown(engine.client)) return Promise.resolve(new LockUnavailableError(name, new Error(NOT_CONNECTED(engine.client.status))));
  return engine.attempt(name, work);
}

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
 */
export class Acquisition<R> implements Sleeper {
  /** The seat, taken when an attempt finds the lock busy (or before the first, when queueing). */
  private waiter: Waiter | undefined = undefined;
  /** The last missed attempt: the lock's TTL, or Redis could not be asked. */
  private outcome: number | LockUnavailableError | undefined = undefined;
  /** Set once an attempt's outcome is unknown (no answer in time): it may still be granted later. */
  private outcomeUnknown = false;
  /** Attempts in a row that could not reach Redis (paces the retries). */
  private failures = 0;
  /** Attempts in a row that found the lock busy without a TTL (paces the retries). */
  private busyWithoutTtl = 0;
  /** When the latest attempt was sent (monotonic ms): a grant's lease runs from then. */
  private sentAt = 0;
  /** The same moment as the attempt's stamp (whole µs, rounded down), which Redis echoes in a grant message. */
  private sentStamp = 0;
  /**
   * The stamp of the latest attempt Redis answered (busy or granted). A grant message that names
   * an older attempt was made before this one reached Redis, and this one did not find it: that
   * grant had ended (given back, expired). See docs/hand-off-protocol.md.
   */
  private answeredStamp = 0;
  /** How many times this acquisition joined the line anew after giving a late grant back. */
  private join = 0;
  /**
   * A random value of this join, sent with its attempts and echoed only by the grant message for
   * it: a message that does not carry it (forged by a client that may publish on the lock's
   * channels but cannot read its keys, or meant for another join) is not taken.
   */
  private joinProof: string | undefined = undefined;
  /** This acquisition's entry in the lock's line (the id a hand-over names), once it takes a seat. */
  private lineEntry: string | undefined = undefined;
  /** Whether an attempt that joins the lock's line has been sent. */
  private joinedLine = false;
  /** Whether wake messages can be counted on (a contender that is not woken by them never needs any). */
  private subscribed: boolean;
  private acquired = false;
  private ended = false;
  /** When the acquisition began (monotonic ms), for the contention counters of one that waited. */
  private readonly startedAt = monotonicNow();
  /** Whether an attempt found the lock busy: only then is the acquisition counted as contention. */
  private foundBusy = false;
  private readonly deadline: number;
  /** This acquisition's request id: a release that undoes its late grant names it. */
  private readonly requestId: string;
  /** The call chain's innermost body when the acquisition began (its holds wait for this one). */
  private readonly frame: OwnerFrame | undefined;
  /** This wait in the deadlock check's graph, from its first miss to its end (docs/deadlocks.md). */
  private waitNode: WaitNode | undefined = undefined;
  /** Whether the latest attempt sent joined (or kept a place in) the lock's line. */
  private lastSentJoined = false;
  /** Set when the wait was refused as a deadlock: a grant still on its way is given back. */
  private refusal: Error | undefined = undefined;
  private resolve!: (result: R) => void;
  private reject!: (error: unknown) => void;
  readonly settled: Promise<R>;

  private constructor(
    private readonly contender: Contender<R>,
    private readonly leaseMs: number,
    private readonly waitMs: number,
    /** What the acquisition resolves with when the wait ends while the lock stays busy. */
    private readonly busyResult: R,
    private readonly options: LockOptions | undefined,
    private readonly cancellation: Cancellation | undefined,
  ) {
    this.deadline = monotonicNow() + waitMs;
    this.subscribed = !contender.wakesOnRelease;
    this.requestId = contender.engine.ids.nextRequest();
    this.frame = waitMs > 0 ? frameAtStart() : undefined;
    this.settled = new Promise<R>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
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
  private takeSeat(): void {
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
  private round(): void {
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
   * messages naming an earlier attempt are stale (`takeHanded`).
   */
  private send(joinLine: boolean): Promise<AttemptOutcome> {
    const sentAt = monotonicNow();
    const stamp = Math.floor(sentAt * 1000);
    this.sentAt = sentAt;
    this.sentStamp = stamp;
    this.lastSentJoined = joinLine;
    const token = joinLine ? `${stamp}.${(this.joinProof ??= randomBytes(8).toString('hex'))}` : '';
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

  /**
   * The grant a release handed to this waiter, if it may be used (docs/hand-off-protocol.md): its
   * message carries this join's proof and names the attempt Redis saw last before the grant, which
   * must be the latest attempt Redis answered "busy" or the one still out. One that names an older
   * attempt is dropped: the attempts after it reached Redis after the grant, so one answered since
   * either found it (and holds by its own answer) or found it gone. 'attempt': a grant that cannot
   * be dated (Redis had no stamp), found by an attempt instead.
   */
  private takeHanded(): DatedGrant | 'attempt' | undefined {
    const handed = this.waiter?.takeGrant();
    if (!handed) return undefined;
    const { attemptStamp, attemptProof } = handed;
    if (attemptStamp === undefined) return 'attempt';
    if (attemptProof !== this.joinProof) return undefined;
    if (attemptStamp !== this.answeredStamp && attemptStamp !== this.sentStamp) return undefined;
    return { ...handed, attemptStamp };
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
   * The lock is busy and the acquisition waits: registered with the process's wait-for graph (once),
   * checked for a cycle through this process's holds and waits at once, and across processes once
   * it has waited `deadlockCheckAfter` (docs/deadlocks.md). No cost until an attempt misses.
   */
  private waiting(): void {
    const { contender } = this;
    let node = this.waitNode;
    if (!node) {
      const target = contender.waitTarget;
      if (!target) return;
      const alsoWaiting = (this.options as { [HOLDS_ALSO_WAITING]?: () => HeldLock[] } | undefined)?.[HOLDS_ALSO_WAITING]?.();
      node = new WaitNode(target, chainHolds(this.frame, alsoWaiting, contender.engine), monotonicNow(), (error) => this.refuse(error));
      this.waitNode = node;
      waitForGraph.add(node);
      if (node.chain.length > 0) contender.engine.deadlocks.watch(node);
    }
    if (this.lastSentJoined && node.lineSeq === undefined) {
      node.lineSeq = nextLineSeq();
      // The entry the attempt joined with (a first attempt joins before any seat is taken).
      node.lineEntry = this.lineEntry ?? contender.lineEntry?.(this.requestId, this.leaseMs, this.join) ?? contender.waiterId;
    }
    const found = waitForGraph.findCycle(node);
    if (!found) return;
    const victim = youngestOf(found.waits);
    victim.refuse(new LockDeadlockError(cycleFrom(found, victim)));
  }

  /**
   * Refused as a deadlock (by this wait's check or another's): ends as a cancellation does, and a
   * grant that arrives after is given back.
   */
  private refuse(error: Error): void {
    if (this.ended) return;
    this.refusal = error;
    const { waiter } = this;
    if (!waiter) return this.end(true, error);
    this.contender.room.leave(waiter, false);
    waiter.cancel(error);
    this.end(true, error);
  }

  /**
   * Sleeps until a wake or the next attempt is due. A missed message never stalls a waiter: every
   * sleep ends by the lock's TTL or the deadline; without Redis (or without a subscription yet) it
   * retries at a gentle pace.
   */
  private sleep(): void {
    const { outcome, failures, busyWithoutTtl } = this;
    // A key without a TTL (an operator's PERSIST, a foreign client) answers -1: no end to wait for,
    // so back off (a release still wakes the waiter at once) rather than retry every millisecond.
    let sleepMs =
      typeof outcome !== 'number' ? backOffMs(failures) : busyWithoutTtl > 0 ? backOffMs(busyWithoutTtl) : Math.max(outcome, 1);
    if (!this.subscribed) sleepMs = Math.min(sleepMs, backOffMs(Math.max(failures, 1)));
    const remaining = this.deadline - monotonicNow();
    (this.waiter as Waiter).sleepThen(Math.max(1, Math.min(sleepMs, remaining, this.contender.maxSleepMs)), this);
  }

  /** Whether a grant must be confirmed on replicas (`syncReplicas`) before it is delivered. */
  private get confirmsOnReplicas(): boolean {
    const { contender } = this;
    return contender.engine.options.syncReplicas > 0 && contender.replicaKey !== undefined;
  }

  /**
   * A release handed the lock to this waiter. Its lease began, at the earliest, the server-counted
   * time after the attempt its message names reached Redis, so from that attempt's send time plus
   * that time on this process's clock (a stalled process that hears of it late finds it over, and
   * gives it back). The grant's short lease becomes the full one when the holder confirms it (`held`).
   */
  private handedOver(handed: DatedGrant): void {
    if (this.ended) return;
    const leaseMs = Math.min(handed.grantLeaseMs, this.leaseMs);
    this.granted({
      fencingToken: handed.fencingToken,
      // Never later than now: the grant was made before its message was heard.
      leaseStartedAt: Math.min(handed.attemptStamp / 1000 + handed.sinceAttemptMs, monotonicNow()),
      grantedLeaseMs: leaseMs < this.leaseMs ? leaseMs : undefined,
    });
  }

  /**
   * A grant: confirmed on the replicas when `syncReplicas` asks for it, then delivered. Nothing is
   * promised before `deliver` checked the caller still wants it and its lease still runs.
   */
  private granted(grant: Grant): void {
    this.acquired = true;
    const sentAt = grant.leaseStartedAt ?? this.sentAt;
    const { contender } = this;
    const { syncReplicas } = contender.engine.options;
    if (syncReplicas > 0 && contender.replicaKey !== undefined && !this.cancellation?.cancelled && !contender.engine.shuttingDown) {
      this.confirmReplicated(contender.replicaKey, syncReplicas).then(
        () => this.deliver(grant, sentAt),
        (error: unknown) => this.end(true, error),
      );
      return;
    }
    this.deliver(grant, sentAt);
  }

  /**
   * Records the grant as held and resolves, unless nobody may rely on it any more; it is then given
   * back (docs/architecture.md#holds):
   * - the caller cancelled meanwhile (an abort, also during the replicas' WAIT): rejects;
   * - the module's shutdown began: it released what was held then and closes the connections next,
   *   so nobody would release this one: rejects `LockShutdownError`, as a wait cut short;
   * - the lease already ended (the reply was handled late: a GC pause, a stalled event loop, a slow
   *   network), so another owner may be in: the wait goes on as if the lock were busy.
   */
  private deliver(grant: Grant, sentAt: number): void {
    const { cancellation, contender } = this;
    let refusal: unknown;
    if (this.refusal) refusal = this.refusal;
    else if (cancellation?.cancelled) refusal = cancellation.reason;
    else if (contender.engine.shuttingDown) refusal = new LockShutdownError(contender.name);
    else if (monotonicNow() >= sentAt + (grant.grantedLeaseMs ?? this.leaseMs) - leaseDriftMs(this.leaseMs)) {
      this.acquired = false;
      const retry = (): void => {
        // Refused (or otherwise ended) while the late grant was given back: no new attempt.
        if (this.ended) return;
        this.rejoin();
        if (cancellation?.cancelled) return this.end(true, cancellation.reason);
        if (this.waitMs <= 0 || monotonicNow() >= this.deadline) return this.endWithoutLock();
        if (this.waiter) this.round();
        else this.takeSeat();
      };
      contender.undoGrant(this.requestId).then(retry, retry);
      return;
    }
    if (refusal !== undefined) {
      const settle = (): void => this.end(true, refusal);
      contender.undoGrant(this.requestId).then(settle, settle);
      return;
    }
    this.end(false, contender.held(grant, this.leaseMs, this.options, sentAt));
  }

  /**
   * `syncReplicas`: waits until that many replicas have the acquisition, so a failover is less
   * likely to lose it; when fewer confirm in time, lets go of it again and fails. Bounded: WAIT
   * itself may take `syncReplicasTimeout`, plus one `commandTimeout`.
   */
  private async confirmReplicated(key: string, syncReplicas: number): Promise<void> {
    const { contender } = this;
    const { engine, name } = contender;
    const { syncReplicasTimeout, commandTimeout } = engine.options;
    let confirmed: number;
    try {
      confirmed = await boundedCall(name, syncReplicasTimeout + commandTimeout, () =>
        waitForReplicas(engine.client, key, syncReplicas, syncReplicasTimeout),
      );
    } catch (error) {
      void contender.undoGrant(this.requestId).catch(() => undefined);
      throw error;
    }
    if (confirmed >= syncReplicas) return;
    await contender.undoGrant(this.requestId).catch(() => undefined);
    throw new LockError(REPLICAS_NOT_SYNCED(name, confirmed, syncReplicas, syncReplicasTimeout));
  }

  /**
   * After giving a late grant back, the wait goes on as a new join of the line: a grant message
   * kept or still on its way names the old entry (or an attempt Redis has answered since) and is
   * never taken (docs/hand-off-protocol.md). The request id stays: an attempt of the old join that
   * runs late finds what it granted under it, and the clean-up gives that back.
   */
  private rejoin(): void {
    this.outcome = 0;
    this.busyWithoutTtl = 0;
    this.join += 1;
    this.joinProof = undefined;
    if (this.waitNode) this.waitNode.lineSeq = undefined;
    const { waiter } = this;
    waiter?.takeGrant();
    if (waiter && this.lineEntry !== undefined) {
      this.lineEntry = this.contender.lineEntry?.(this.requestId, this.leaseMs, this.join);
      waiter.id = this.lineEntry;
    }
  }

  /** Counts this acquisition, which found the lock busy, in its instance's contention (the lock board's plots). */
  private countContention(failed: boolean): void {
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
  private endWithoutLock(): void {
    const { outcome } = this;
    if (outcome instanceof LockUnavailableError) this.end(true, outcome);
    else this.end(false, this.busyResult);
  }

  /**
   * Ends the acquisition once: leaves the seat; without the lock, cleans up behind it (leave the
   * line, undo a late grant: waited for unless Redis is unreachable, so the acquisition still
   * settles within its bound); then resolves with `result`, or rejects with it when `failed`.
   */
  private end(failed: boolean, result: unknown): void {
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
