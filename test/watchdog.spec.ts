import { LockLostError, LockService } from '../lib';
import { createLockApp, deferred, waitUntil } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';

describe('watchdog', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.resume();
    await redis?.stop();
  });

  it('renews every held lock together, once per round', async () => {
    const watchdogTimeout = 600;
    const app = await createLockApp({ redis: redis.url, watchdogTimeout });
    const admin = redis.client();
    try {
      const locks = app.get(LockService);
      const held = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const lock = locks.getLock(`batched-${i}`);
          await lock.lock();
          return lock;
        }),
      );
      const evalshaCalls = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);
      const before = await evalshaCalls();
      await new Promise((r) => setTimeout(r, watchdogTimeout * 2));
      const renewals = (await evalshaCalls()) - before;
      // 20 locks x about 6 rounds: renewed (a multiple of 20), and every lock still there.
      expect(renewals).toBeGreaterThanOrEqual(20);
      expect(renewals % 20).toBe(0);
      for (const lock of held) expect(await lock.isLocked()).toBe(true);
      await Promise.all(held.map((lock) => lock.unlock()));
    } finally {
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
