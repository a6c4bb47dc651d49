import type { TestingModule } from '@nestjs/testing';
import { LockService, LockUnavailableError } from '../lib';
import { createLockApp } from './support/lock-app';
import { startRedis, type TestRedis } from './support/redis-server';

/**
 * Timeouts and deadlines run on a monotonic clock: a wall-clock step (NTP, an operator, a VM
 * resumed), simulated by `Date.now` jumping 5 s, neither stretches a 100 ms command timeout nor
 * ends a wait early.
 */
describe('a wall-clock step', () => {
  let redis: TestRedis;
  let app: TestingModule;
  let other: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    app = await createLockApp({ redis: redis.url, commandTimeout: 100 });
    other = await createLockApp({ redis: redis.url });
  });

  afterEach(() => jest.restoreAllMocks());

  afterAll(async () => {
    await app?.close();
    await other?.close();
    await redis?.stop();
  });

  /** Moves `Date.now` by `ms` from now on, as a clock step would. */
  function stepWallClock(ms: number): void {
    const wall = Date.now.bind(Date);
    jest.spyOn(Date, 'now').mockImplementation(() => wall() + ms);
  }

  it('5 s backward while Redis does not answer: the 100 ms command timeout still ends the call within a second', async () => {
    const lock = app.get(LockService).getLock('step-timeout');
    await redis.pause();
    try {
      const started = performance.now();
      const asking = lock.isLocked().catch((e: unknown) => e);
      stepWallClock(-5_000);
      const outcome = await asking;
      const tookMs = performance.now() - started;
      expect(outcome).toBeInstanceOf(LockUnavailableError);
      expect(tookMs).toBeLessThan(1_000);
    } finally {
      await redis.resume();
    }
  });

  it('5 s forward during a 1 s wait: the wait neither ends early nor outlives its bound', async () => {
    const held = other.get(LockService).getLock('step-wait');
    await held.lock();
    try {
      const started = performance.now();
      const waiting = app.get(LockService).getLock('step-wait').tryLock({ waitTime: 1_000 });
      stepWallClock(5_000);
      expect(await waiting).toBe(false);
      const tookMs = performance.now() - started;
      expect(tookMs).toBeGreaterThanOrEqual(950);
      expect(tookMs).toBeLessThan(5_000);
    } finally {
      await held.unlock();
    }
  });
});
