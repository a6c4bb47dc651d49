import type { CallTicket } from '../redis/bounded-call';
import type { RedisClient } from '../redis/redis-client';
import type { HeldLock } from '../runtime/held-locks';
import type { HeldLocks } from '../runtime/hold-registry';
import type { InstanceRegistry } from '../runtime/instance-registry';
import { innermostFrame, type OwnerFrame } from '../runtime/owner-context';
import type { OwnerIds } from '../runtime/owner-ids';

/**
 * A module instance as deadlock detection sees it (its `LockEngine` is one): the connection and the
 * bounded calls its records and steps go through, its hold registry, its client id and identity, and
 * how long a wait lasts before it is checked across processes.
 */
export interface DeadlockEngine {
  readonly client: RedisClient;
  readonly holds: HeldLocks;
  readonly ids: Pick<OwnerIds, 'clientId'>;
  readonly instances: Pick<InstanceRegistry, 'self'>;
  readonly options: { readonly deadlockCheckAfter: number };
  call<T>(lockName: string | readonly string[], work: (ticket: CallTicket) => Promise<T>): Promise<T>;
}

/** How a wait conflicts with holders (docs/deadlocks.md#the-wait-for-graph). */
export type WaitMode = 'exclusive' | 'read' | 'write' | 'permits';

/** Which layout a waited lock has in Redis (the step script reads each its own way). */
export type WaitKind = 'lock' | 'readWrite' | 'semaphore';

/** What an acquisition waits for, as the deadlock check sees it: supplied by its contender. */
export interface WaitTarget {
  readonly engine: DeadlockEngine;
  readonly kind: WaitKind;
  readonly name: string;
  /** The waited lock's key in this process's hold registry (and its main key in Redis). */
  readonly lockKey: string;
  /** The acquisition's owner (a semaphore's permit id): never its own blocker. */
  readonly ownerId: string;
  readonly mode: WaitMode;
  /** Permits asked for (1 for every other kind). */
  readonly need: number;
  /** The semaphore's limit (1 for every other kind). */
  readonly total: number;
  /** False for a RedLock: no records, no line; checked in this process only. */
  readonly crossProcess: boolean;
}

/**
 * Holds the wait holds up besides its call chain's: a multi-lock's members taken already, for the
 * wait of the next one. Passed in the member's acquisition options.
 */
export const HOLDS_ALSO_WAITING = Symbol('holdsAlsoWaiting');

/** A hold the wait makes wait, and why it counts: its body still runs, or (no frame) it is the waiting owner's. */
export interface ChainHold {
  readonly hold: HeldLock;
  readonly registry: HeldLocks;
  /** The module instance whose hold it is. */
  readonly engine: DeadlockEngine;
  /** The body that recorded it; undefined for a multi-lock's member taken already. */
  readonly frame: OwnerFrame | undefined;
}

/**
 * Whether a hold can keep a wait waiting for ever: the watchdog keeps it. A hold taken with a
 * `leaseTime` ends by itself when its lease does, so a wait for it ends too: never an edge.
 */
export const keptByWatchdog = (hold: HeldLock): boolean => hold.renewedHolds > 0;

/** Whether `entry` still holds up its chain: its body runs and its hold is the registry's current one. */
export const stillHeld = (entry: ChainHold): boolean =>
  !entry.frame?.ended && entry.registry.isCurrent(entry.hold) && keptByWatchdog(entry.hold);

let nextWaitSeq = 0;

/**
 * One wait: an acquisition that found its lock busy, with the holds its call chain holds (which wait
 * for it). Registered with the process's `WaitForGraph` from its first miss to its end.
 */
export class WaitNode {
  /** Start order in this process: a larger one started later (the youngest is refused). */
  readonly seq = ++nextWaitSeq;
  /** This wait's id in records (`<client id>:w<seq>`). */
  readonly id: string;
  readonly startedAt: number;
  /**
   * When this wait's latest line join was answered (a sequence shared by every wait of the
   * process): a wait of the same lock with a smaller one joined its line earlier, on the same
   * connection, so it stands ahead (Redis answers one connection in order).
   */
  lineSeq: number | undefined = undefined;
  /** Its entry in the lock's line, when it has one (for the cross-process step). */
  lineEntry: string | undefined = undefined;
  /** The wait's start on the Redis server's clock (ms), once its first record told it. */
  serverStart: number | undefined = undefined;

  constructor(
    readonly target: WaitTarget,
    readonly chain: readonly ChainHold[],
    startedAt: number,
    /** Ends the acquisition with `error` (the wait is refused). */
    readonly refuse: (error: Error) => void,
  ) {
    this.startedAt = startedAt;
    this.id = `${target.engine.ids.clientId}:w${this.seq}`;
  }

  /** The chain's holds that still hold it up. */
  liveChain(): ChainHold[] {
    return this.chain.filter(stillHeld);
  }
}

let lineSeqCounter = 0;

/** The next line-join sequence number (see `WaitNode.lineSeq`). */
export const nextLineSeq = (): number => ++lineSeqCounter;

/**
 * The holds the current call chain's running bodies recorded (every module instance's), plus
 * `alsoWaiting` (a multi-lock's members taken already), without the waited lock's own holds of
 * `ownerId` (a re-entry never waits).
 */
export function chainHolds(frame: OwnerFrame | undefined, alsoWaiting: readonly HeldLock[] | undefined, owner: DeadlockEngine): ChainHold[] {
  const chain: ChainHold[] = [];
  for (let f = frame; f; f = f.parent) {
    if (f.ended) continue;
    for (const hold of f.holds) {
      if (f.registry.isCurrent(hold) && keptByWatchdog(hold)) chain.push({ hold, registry: f.registry, engine: f.site as DeadlockEngine, frame: f });
    }
  }
  for (const hold of alsoWaiting ?? []) {
    if (owner.holds.isCurrent(hold) && keptByWatchdog(hold)) chain.push({ hold, registry: owner.holds, engine: owner, frame: undefined });
  }
  return chain;
}

/** The innermost frame where an acquisition starts (kept until it waits: an async step may lose it). */
export const frameAtStart = innermostFrame;
