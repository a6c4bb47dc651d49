import { LockUnavailableError } from '../../errors';
import { NOT_CONNECTED } from '../../lock.messages';
import type { CallTicket } from '../../redis/bounded-call';
import type { Waiter } from '../../redis/waiter';
import type { LockEngine } from '../../engine/lock-engine';
import { isDown } from '../../redis/redis-client';
import type { LockOptions } from '../lock';
import type { WaitTarget } from '../../deadlocks/wait-node';

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

/** Whether an attempt's outcome is a grant (not "busy", nor "Redis could not be asked"). */
export const isGrant = (outcome: AttemptOutcome): outcome is Grant => typeof outcome === 'object' && !(outcome instanceof LockUnavailableError);

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
