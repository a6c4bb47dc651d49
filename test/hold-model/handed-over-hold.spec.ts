import type { HoldTerms } from '../../lib/runtime/held-locks';
import { HeldLocks } from '../../lib/runtime/hold-registry';
import { monotonicNow } from '../../lib/monotonic-clock';
import { waitFor } from '../support/wait-for';

/**
 * A lock a release handed over starts on a short grant lease: until a renewal with the full lease
 * gets through (its confirmation, or a watchdog round), the hold ends by its own timer when that
 * short lease does, even though the watchdog keeps it; once renewed it no longer does.
 */
describe('HeldLocks: a handed-over hold awaiting its confirmation', () => {
  const GRANT_LEASE_MS = 60;
  const terms = (): HoldTerms => ({
    leaseMs: 30_000,
    grantedLeaseMs: GRANT_LEASE_MS,
    grantSentAt: monotonicNow(),
    renewal: { renew: async () => true },
    releaseOne: async () => undefined,
  });

  it('ends with the short grant lease when nothing renews it', async () => {
    const holds = new HeldLocks();
    const ended: string[] = [];
    holds.whenLeaseEnds((hold) => ended.push(hold.name));
    const hold = holds.acquired('handed', 'lock:{handed}', 'owner-1', terms());
    expect(hold.awaitingConfirmation).toBe(true);
    await waitFor(() => ended.length === 1, { what: 'the grant lease to end the hold', timeoutMs: 5_000 });
    expect(ended).toEqual(['handed']);
  });

  it('a renewal with the full lease (a watchdog round or the confirmation) stops that', async () => {
    const holds = new HeldLocks();
    const ended: string[] = [];
    holds.whenLeaseEnds((hold) => ended.push(hold.name));
    const hold = holds.acquired('renewed', 'lock:{renewed}', 'owner-1', terms());
    holds.renewed(hold, monotonicNow(), 30_000);
    expect(hold.awaitingConfirmation).toBe(false);
    expect(hold.leaseEndTimer).toBeUndefined();
    expect(hold.expiresAt).toBeGreaterThan(monotonicNow() + 29_000);
    expect(ended).toEqual([]);
  });
});
