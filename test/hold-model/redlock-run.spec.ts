import type { TestingModule } from '@nestjs/testing';
import { LockLostError, LockService, LockTimeoutError } from '../../lib';
import { createLockApp, releasesSettled, waitUntil } from '../support/lock-app';
import { startRedis, TestRedis } from '../support/redis-server';

/**
 * `LockService.runRedLock(name, fn)`: a RedLock held for a body, like every other kind's `run`
 * (docs/owners-and-reentry.md#the-owner-model): its signal aborts with `LockLostError` once a majority
 * of the masters no longer holds it, and the run releases the hold it took.
 */
describe('LockService.runRedLock', () => {
  let redis: TestRedis;
  let app: TestingModule;
  let other: TestingModule;
  const watchdogTimeout = 600; // renewed every 200 ms

  beforeAll(async () => {
    redis = await startRedis();
    const options = { redis: redis.url, watchdogTimeout, redlock: { clients: [redis.url], masterTimeout: 1_000 } };
    app = await createLockApp(options);
    other = await createLockApp(options);
  });
  afterAll(async () => {
    await other?.close();
    await app?.close();
    await redis?.stop();
  });

  it('runs the body under the lock, excludes another instance, and releases after', async () => {
    const name = 'redlock-run';
    const result = await app.get(LockService).runRedLock(name, async ({ name: held, fencingToken }) => {
      expect(held).toBe(name);
      expect(fencingToken).toBeGreaterThan(0);
      await expect(other.get(LockService).runRedLock(name, async () => 'inside', { waitTime: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
      return 'done';
    });
    expect(result).toBe('done');
    await releasesSettled(app);
    expect(await other.get(LockService).runRedLock(name, async () => 'next', { waitTime: 0 })).toBe('next');
  });

  it('the body is told when the lock is lost on the masters (its key deleted)', async () => {
    const name = 'redlock-run-lost';
    let reason: unknown;
    await app.get(LockService).runRedLock(name, async ({ signal }) => {
      await redis.client().del(`lock:{${name}}`);
      await waitUntil(() => signal.aborted, 5 * watchdogTimeout);
      reason = signal.reason;
    });
    expect(reason).toBeInstanceOf(LockLostError);
    await releasesSettled(app);
  });

  it('refuses a bad name before any call', async () => {
    await expect(app.get(LockService).runRedLock('', async () => undefined)).rejects.toThrow();
  });
});
