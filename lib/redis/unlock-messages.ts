import type { HandedGrant } from './waiter';

/** Payload of an unlock message: how many local waiters the release can admit. */
export const WAKE_ONE = 'one';
export const WAKE_ALL = 'all';
export type UnlockMessage = typeof WAKE_ONE | typeof WAKE_ALL;
/**
 * Prefix of a message that wakes the waiters it names (space-separated waiter ids), in whichever
 * process they wait: a semaphore's release wakes exactly the waiters its freed permits admit.
 */
export const WAKE_IDS = 'ids:';
/**
 * Prefix of a message that hands a lock to one waiter: `granted:<waiter id> <token> <send stamp of
 * its last attempt>.<its join's proof> (or -) <ms since that attempt> <grant lease ms>` (the waiter id may have spaces:
 * the last four fields are not). See docs/hand-off-protocol.md.
 */
export const GRANT = 'granted:';
/**
 * An older version's grant message (`grant:<waiter id> <token> <ms since> <grant lease ms>`): it
 * cannot be dated safely, so it only wakes the waiter it names, whose attempt finds its grant.
 */
export const LEGACY_GRANT = 'grant:';

/**
 * Prefix of the notice that the waiter ahead in line was granted the lock: `next:<waiter id> <grant
 * lease ms>`; the named waiter sleeps no longer than that (see `Waiter.wakeWithin`).
 */
export const NEXT = 'next:';

/** A positive decimal: Redisson's write-unlock `1` or a semaphore's permit count (docs/redisson-interop.md#wake-ups). */
export const REDISSON_WAKE_ALL = /^[1-9][0-9]*$/;

/** Reads a `GRANT` message: the waiter it names and what it was handed. */
export function parseGrant(message: string): { waiterId: string; grant: HandedGrant } | undefined {
  const fields = message.slice(GRANT.length).split(' ');
  if (fields.length < 5) return undefined;
  const [token, stamp, since, lease] = fields.splice(-4);
  const dot = stamp.indexOf('.');
  const dated = stamp !== '-';
  return {
    waiterId: fields.join(' '),
    grant: {
      fencingToken: Number(token) || undefined,
      attemptStamp: dated ? Number(dot === -1 ? stamp : stamp.slice(0, dot)) : undefined,
      attemptProof: dated && dot !== -1 ? stamp.slice(dot + 1) : undefined,
      sinceAttemptMs: Number(since),
      grantLeaseMs: Number(lease),
    },
  };
}

/** The waiter an older version's grant message names (see `LEGACY_GRANT`). */
export function legacyGrantee(message: string): string {
  return message.slice(LEGACY_GRANT.length).split(' ').slice(0, -3).join(' ');
}
