import { ReentryEndedError } from '../errors';
import type { HeldLock } from '../runtime/held-locks';
import type { Grant } from './acquisition/contender';

// What the single-server kinds' scripts answer, read the same way by every kind.

/** Outcome of one acquisition attempt's script: a grant, or how long the lock may stay busy (ms). */
export type AttemptResult = Grant | number;

const NO_TOKEN: Grant = { fencingToken: undefined };

/**
 * Reads an acquire script's reply: `{token}` (or nil, for a kind without tokens) when granted,
 * else the lock's TTL in ms.
 */
export function attemptResult(reply: unknown): AttemptResult {
  if (reply === null || reply === undefined) return NO_TOKEN;
  if (Array.isArray(reply)) return { fencingToken: Number(reply[0]) || undefined };
  return Number(reply);
}

/** An acquire script's answer to a re-entry-only attempt whose owner holds nothing (see `BaseLock.reenterOnly`). */
export const REENTRY_ENDED = -4;

/**
 * A re-entry-only attempt's result: Redis answering that the owner holds nothing rejects it (the
 * hold it would re-enter ended), so the lock a body's call chain asked through asks again as an owner
 * of its own (docs/owners-and-reentry.md#the-owner-model).
 */
export function reentryAnswer(lock: { readonly reenterOnly: boolean; readonly name: string }, result: AttemptResult): AttemptResult {
  if (lock.reenterOnly && result === REENTRY_ENDED) throw new ReentryEndedError(lock.name);
  return result;
}

/** Outcome of one release: `null` when not held, 0 when holds remain, 1 when released. */
export type ReleaseResult = 0 | 1 | null;

/** A read-write release's answer: no hold in this mode, but the owner holds the other one. */
export const HOLDS_OTHER_MODE = -1;

/** A hold's fencing token as the lock hash stores it ('' for none): its episode, as a release names it. */
export const tokenText = (hold: HeldLock | undefined): string => (hold?.fencingToken === undefined ? '' : String(hold.fencingToken));

/**
 * The request part of a line entry: the acquisition's request id, then `/<join>` from its second
 * join of the line on (entries are unique per join; the scripts apply the bare request id).
 */
export const lineRequest = (requestId: string, join: number): string => (join === 0 ? requestId : `${requestId}/${join}`);
