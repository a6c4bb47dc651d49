import { Lock, LockLostError, LockService } from '../lib';
import { CommandMonitor, scriptCallWith } from './support/command-monitor';
import { createLockApp, deferred, waitUntil } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';
import { waitFor } from './support/wait-for';

/** A lock and the owner id its Redis commands carry. */
type Owned = Lock & { readonly ownerId: string };

describe('watchdog', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.resume();
    await redis?.stop();
  });

  it('renews every held lock together, round after round, and stops renewing a lock once it is released', async () => {
    const watchdogTimeout = 600; // renewed every 200 ms
    const ROUNDS = 6; // two leases' worth: without renewals every lock would have expired
    const app = await createLockApp({ redis: redis.url, watchdogTimeout });
    const admin = redis.client();
    const monitor = await CommandMonitor.start(admin);
    try {
      const locks = app.get(LockService);
      const take = async (name: string) => {
        const lock = locks.getLock(name) as Owned;
        await lock.lock();
        return lock;
      };
      const held = await Promise.all(Array.from({ length: 20 }, (_, i) => take(`batched-${i}`)));
      // Held past this unlock, so the rounds after it can be counted.
      const keeper = await take('batched-keeper');
      const key = (lock: Owned) => `lock:{${lock.name}}`;
      const renewalsOf = (lock: Owned, between: { from?: number; to?: number }) =>
        monitor.count(scriptCallWith(key(lock), lock.ownerId), between);

      const heldFrom = await monitor.mark(admin);
      let expiredSeen = 0;
      await waitFor(
        async () => {
          // Every look: every lease still running.
          const ttls = await Promise.all(held.map((lock) => admin.pttl(key(lock))));
          expiredSeen += ttls.filter((ttl) => ttl <= 0).length;
          return held.every((lock) => renewalsOf(lock, { from: heldFrom }) >= ROUNDS);
        },
        { what: `every lock renewed ${ROUNDS} times`, timeoutMs: 20_000 },
      );
      const heldTo = await monitor.mark(admin);
      expect(expiredSeen).toBe(0);
      for (const lock of held) expect(await lock.isLocked()).toBe(true);
      // Together: every round renews every lock, so their counts stay level (each mark may cut one
      // round in two, hence up to 2 apart).
      const counts = held.map((lock) => renewalsOf(lock, { from: heldFrom, to: heldTo }));
      expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(2);

      await Promise.all(held.map((lock) => lock.unlock()));
      const releasedAt = await monitor.mark(admin);
      await waitFor(() => renewalsOf(keeper, { from: releasedAt }) >= 2, { what: 'two renewal rounds after the release' });
      for (const lock of held) expect(renewalsOf(lock, { from: releasedAt })).toBe(0);
      await keeper.unlock();
    } finally {
      monitor.stop();
      await app.close();
    }
  });

  it('a server that stops answering for longer than the lease makes the lock count as lost', async () => {
    const watchdogTimeout = 600;
    const app = await createLockApp({ redis: redis.url, watchdogTimeout });
    try {
      const gate = deferred();
      let signal: AbortSignal | undefined;
      const running = app.get(LockService).run('frozen-server', async (context) => {
        signal = context.signal;
        await gate.promise;
      });
      await waitUntil(() => signal !== undefined);
      await redis.pause();
      try {
        await waitUntil(() => signal!.aborted, watchdogTimeout * 10);
      } finally {
        await redis.resume();
      }
      expect(signal!.reason).toBeInstanceOf(LockLostError);
      gate.resolve();
      await running;
    } finally {
      await app.close();
    }
  });
});
