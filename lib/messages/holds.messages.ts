import { lockNames, quoteName, show } from './quoting';

/** Holds and waits: why a held lock was lost, its renewal and release, force release, jobs (skipIfLocked, minHoldTime). */

// --- why a held lock was lost (LockLostError's reason) ---

export const LOST_RENEWAL_FOUND_GONE = 'renewal found it no longer held';
export const LOST_LEASE_TIME_RAN_OUT = 'its leaseTime ran out';
export const LOST_LEASE_RAN_OUT_UNRENEWED = 'its lease ran out before it was renewed (process paused or Redis unreachable)';
export const LOST_RENEWALS_FAILED = 'renewals failed until its lease ran out';
export const REENTRY_HOLD_ENDED = (name: string): string => `the hold of "${name}" to re-enter had ended`;
export const LOST_REENTRY_ENDED = 'it had ended in Redis: a re-entry of its owner found the owner holding nothing';
export const LOST_NEW_EPISODE = 'it had ended in Redis: the same owner was granted the lock again with a new fencing token';
export const LOST_READ_ENDED = 'its read hold had ended in Redis: the same owner was granted the read lock again, in a new episode';
export const LOST_WRITE_ENDED = 'its write hold had ended in Redis: the same owner was granted the read lock as a reader, no longer the writer';
export const LOST_RELEASE_FOUND_GONE = 'a release of an inner hold found the lock no longer held';
export const LOST_HANDED_OVER_GONE = 'the lock a release handed over was gone when its new holder confirmed it';
export const LOST_HAND_OVER_UNCONFIRMED =
  'its hand-over could not be confirmed before its grant lease ended (Redis unreachable or not answering)';

export const LOCK_LOST = (name: string, reason: string): string =>
  `Lock ${quoteName(name)} was lost (${reason}); its holder's signal is aborted`;

export const RENEWAL_FAILED = (name: string, error: unknown): string =>
  `Renewal of lock ${quoteName(name)} failed, retrying until its lease runs out: ${String(error)}`;

export const RELEASE_FAILED = (name: string, error: unknown): string =>
  `Release of lock ${quoteName(name)} failed; it will expire with its lease: ${String(error)}`;

export const RELEASE_FOUND_NOTHING = (name: string): string =>
  `Lock ${quoteName(name)} was already gone when its holder released it (it had been lost)`;

export const RELEASE_LEFT_TO_SHUTDOWN = (name: string): string =>
  `Lock ${quoteName(name)} is released by the module's shutdown, which began while its holder ran`;

export const SHUTDOWN_RELEASE_FAILED = (error: unknown): string =>
  `Releasing held locks at shutdown did not complete: ${String(error)}`;

// --- force release conditional on a fencing token ---

export const FORCE_RELEASE_BAD_TOKEN = (call: string, token: unknown): string =>
  `${call}({ fencingToken: ${show(token)} }) is refused: fencingToken must be a positive whole number (a token inspect() or getFencingToken() gave)`;

export const FORCE_RELEASE_NO_TOKEN = (call: string, what: string): string =>
  `${call}({ fencingToken }) is refused: ${what} has no fencing token to compare (call it without options to release whoever holds it)`;

export const FORCE_RELEASE_BAD_PERMIT_ID = (permitId: unknown): string =>
  `forceRelease({ permitId: ${show(permitId)} }) is refused: permitId must be a holder's owner id (a non-empty string, as inspect() lists it)`;

// --- jobs and consumers (skipIfLocked, minHoldTime) ---

/** Debug level only: a skipped run is the expected outcome on every replica but one. */
export const LOCK_SKIPPED = (name: string | readonly string[], waitTime: number): string =>
  `Lock ${lockNames(name)} is held elsewhere: not acquired within ${waitTime} ms, the work was skipped (skipIfLocked)`;

/** Debug level only: a job that fires while its replica shuts down is left to the other replicas. */
export const LOCK_SKIPPED_AT_SHUTDOWN = (name: string | readonly string[]): string =>
  `Lock ${lockNames(name)} was not taken: the module is shutting down, the work was skipped (skipIfLocked)`;

export const INVALID_MIN_HOLD_TIME = (value: unknown): string =>
  `minHoldTime must be a finite number of milliseconds >= 0 (got ${show(value)})`;

export const MIN_HOLD_OVER_LEASE = (minHoldTime: number, leaseTime: number): string =>
  `minHoldTime (${minHoldTime} ms) must not exceed leaseTime (${leaseTime} ms): the lock would expire ` +
  'before its minimum hold ended';

export const REQUEST_CLOSED = 'The client closed the request while it waited for a lock';
