import { LockKeys } from '../redis/lock-keys';
import type { CallTicket } from '../redis/bounded-call';
import type { ScriptCall } from '../redis/lua-script';
import type { LockEngine } from '../engine/lock-engine';
import type { LockKind } from '../metrics/lock-telemetry';
import { attemptOnConnection, type AttemptOutcome, type Contender, type Grant, type WaitRoom } from './acquisition/contender';
import type { AttemptResult, ReleaseResult } from './attempt-results';
import type { WaitKind, WaitMode, WaitTarget } from '../deadlocks/wait-node';
import type { LockOptions } from './lock';

const ignore = (): undefined => undefined;

/**
 * The attempt side of every single-server lock kind: its contender in the acquisition machine
 * (`Acquisition`, which waits on the shared subscriber between attempts, never polling). A kind
 * supplies its scripts through `acquireScript`, `releaseOne` and `renewalCall`; `BaseLock` adds the
 * lock API, the holds and their handles.
 */
export abstract class LockContender implements Contender<boolean> {
  constructor(
    /** @internal */
    readonly engine: LockEngine,
    readonly name: string,
    /** The Redis key that identifies this lock (and the owner context entry). */
    readonly lockKey: string,
    readonly ownerId: string,
  ) {}

  /** One atomic acquisition attempt: the kind's acquire script. */
  protected abstract acquireScript(
    leaseMs: number,
    requestId: string,
    joinLine: boolean,
    ticket?: CallTicket,
    attemptStamp?: string,
    join?: number,
  ): Promise<AttemptResult>;
  /**
   * One atomic release of one hold; with `grantedBy` (an acquire request id), only of the hold that
   * request granted, if it did.
   */
  protected abstract releaseOne(requestId: string, grantedBy?: string, ticket?: CallTicket, heldToken?: string): Promise<ReleaseResult>;
  /**
   * The script the watchdog replays to renew this owner's hold: it never shortens a longer lease
   * another hold has; `exact`: the lease becomes `leaseMs` (a `minHoldTime` release). `token`: the
   * episode's fencing token, for a kind whose renewal can check it (an ended episode renews nothing).
   */
  protected abstract renewalCall(leaseMs: number, exact?: boolean, token?: number): ScriptCall;
  /** The `lock.kind` of this lock's metrics and spans. */
  abstract readonly kind: LockKind;

  /** @internal Channel whose unlock messages wake this lock's waiters. */
  get waitChannel(): string {
    return LockKeys.channel(this.lockKey);
  }

  /** @internal Longest sleep between attempts (a fair lock's waiter must refresh its place in line). */
  get maxSleepMs(): number {
    return Number.POSITIVE_INFINITY;
  }

  /**
   * Releases one hold of this owner at shutdown, whichever object took it (the read and write views
   * of a read-write lock share one owner's hold record).
   */
  protected releaseAnyHold(): Promise<unknown> {
    return this.releaseOne(this.engine.ids.nextRequest());
  }

  // The contender's side of an acquisition (see `Contender` in acquisition/contender.ts).

  /** @internal What a wait for this lock waits for, as the deadlock check sees it (made when it waits). */
  get waitTarget(): WaitTarget {
    const { engine, name, lockKey, ownerId } = this;
    return { engine, kind: this.waitKind, name, lockKey, ownerId, mode: this.waitMode, need: 1, total: 1, crossProcess: true };
  }

  /** @internal How a wait for this lock conflicts with its holders. */
  protected get waitMode(): WaitMode {
    return 'exclusive';
  }

  /** @internal The lock's layout in Redis, for the cross-process deadlock check. */
  protected get waitKind(): WaitKind {
    return 'lock';
  }

  /** @internal */
  get room(): WaitRoom {
    return this.engine.subscriber;
  }

  /** @internal A release message wakes this lock's waiters. */
  readonly wakesOnRelease = true;

  /** @internal */
  get replicaKey(): string {
    return this.lockKey;
  }

  /** @internal One attempt, bounded; Redis failures come back as a value. */
  attempt(leaseMs: number, requestId: string, joinLine: boolean, attemptStamp = '', join = 0): Promise<AttemptOutcome> {
    return attemptOnConnection(this.engine, this.name, (ticket) =>
      this.acquireScript(leaseMs, requestId, joinLine, ticket, attemptStamp, join),
    );
  }

  /**
   * @internal While others of this process wait already (the channel is subscribed), a newcomer takes
   * its seat before its attempt: a hand-over that names it right after that attempt joined the line
   * is not missed, and the usual second attempt after seating is saved. An uncontended acquisition
   * never subscribes.
   */
  seatsFirst(): boolean {
    return this.engine.subscriber.hasWaiters(this.waitChannel);
  }

  /**
   * @internal Asks only to re-enter the hold of this owner that Redis has now, never to start a new
   * one: set on the lock a body's call chain re-enters through (docs/owners-and-reentry.md#the-owner-model).
   * Redis answering that the owner holds nothing rejects the attempt with `ReentryEndedError`.
   */
  reenterOnly = false;

  /** @internal Records a grant as held; what the acquisition resolves with. */
  abstract held(grant: Grant, leaseMs: number, options: LockOptions | undefined, grantSentAt: number): boolean;

  /**
   * @internal A grant nobody will use: give back at once the hold `requestId` was granted (an undo
   * by request: if that grant already ended and another acquisition of this owner holds the lock
   * now, that hold is not touched).
   */
  undoGrant(requestId: string): Promise<unknown> {
    const releaseId = this.engine.ids.nextRequest();
    return this.engine.call(this.name, (ticket) => this.releaseOne(releaseId, requestId, ticket)).catch(ignore);
  }

  /**
   * @internal A wait that ends without the lock: a waiter leaves its line (waited for), which also
   * gives back a lock a release handed to it meanwhile. Otherwise, when an attempt's outcome is
   * unknown, the release that only undoes a grant made by `requestId` goes out on the same
   * connection, after the attempts, so it runs after them whenever Redis gets to them.
   */
  abandon(requestId: string, joinedLine: boolean, outcomeUnknown: boolean, lineEntry?: string): Promise<unknown> | undefined {
    const { engine } = this;
    const leaving = joinedLine && lineEntry !== undefined ? this.leaveLine(requestId, lineEntry) : undefined;
    if (leaving) return leaving;
    if (outcomeUnknown) {
      const releaseId = engine.ids.nextRequest();
      void engine.call(this.name, () => this.releaseOne(releaseId, requestId)).catch(ignore);
    }
    return leaving;
  }

  /**
   * Leaves a Redis line of waiters (entry `lineEntry`), giving back a grant made to `requestId`, for
   * a kind that has one; bounded, never rejects.
   */
  protected leaveLine(_requestId: string, _lineEntry: string): Promise<unknown> | undefined {
    return undefined;
  }
}
