import type { TestingModule } from '@nestjs/testing';
import { LockLostError, LockService, LockUnavailableError } from '../../lib';
import { LockEngine } from '../../lib/engine/lock-engine';
import { deferred, releasesSettled, waitUntil } from '../support/lock-app';
import { RestartableRedis } from '../support/restartable-redis';
import { CapturedLogs, createFaultApp, timed } from './fault-app';

/**
 * Redis frozen (SIGSTOP): it keeps its connections open and answers nothing, like a network path
 * that drops packets. Every operation settles within its own bound, as a lock error, and the same
 * module works again once Redis resumes. Bounds are generous upper limits that catch a hang.
 */
describe('faults: Redis frozen (SIGSTOP / SIGCONT)', () => {
  const COMMAND_TIMEOUT = 400;
  let redis: RestartableRedis;
  let app: TestingModule;
  let logs: CapturedLogs;
  let locks: LockService;
  let counter = 0;
  const fresh = () => `frozen-${++counter}`;

  beforeAll(async () => {
    redis = await RestartableRedis.start();
    ({ app, logs } = await createFaultApp({ redis: redis.url, commandTimeout: COMMAND_TIMEOUT, watchdogTimeout: 900 }));
    locks = app.get(LockService);
  });
  afterEach(() => redis.resume());
  afterAll(async () => {
    redis?.resume();
    await app?.close();
    await redis?.dispose();
  });

  /** Runs `during` while Redis is frozen, then resumes it. */
  async function whileFrozen<T>(during: () => Promise<T>): Promise<T> {
    redis.pause();
    try {
      return await during();
    } finally {
      redis.resume();
    }
  }

  it('run() with a waitTime rejects with LockUnavailableError by waitTime + one commandTimeout, without running fn', async () => {
    const name = fresh();
    let ran = false;
    const outcome = await whileFrozen(() =>
      timed(locks.run(name, async () => (ran = true), { waitTime: 500 })),
    );
    expect(outcome.error).toBeInstanceOf(LockUnavailableError);
    expect((outcome.error as LockUnavailableError).lockName).toBe(name);
    expect((outcome.error as Error).cause).toBeInstanceOf(Error);
    expect(ran).toBe(false);
    expect(outcome.ms).toBeLessThan(500 + COMMAND_TIMEOUT + 1_500);
    // The attempts Redis runs after it resumes grant nothing that stays: no phantom hold.
    const raw = redis.client();
    await waitUntil(async () => (await raw.exists(`lock:{${name}}`)) === 0, 5_000);
    // The same module works again.
    expect(await locks.run(name, async () => 'ran', { waitTime: 2_000 })).toBe('ran');
  });

  it('tryLock() with waitTime 0 rejects with LockUnavailableError (not false) within one commandTimeout', async () => {
    const outcome = await whileFrozen(() => timed(locks.getLock(fresh()).tryLock({ waitTime: 0 })));
    expect(outcome.error).toBeInstanceOf(LockUnavailableError);
    expect(outcome.ms).toBeLessThan(COMMAND_TIMEOUT + 1_500);
  });

  it('lock() without a wait time keeps trying while Redis is frozen and acquires once it resumes', async () => {
    const lock = locks.getLock(fresh());
    redis.pause();
    const acquiring = lock.lock();
    const engine = app.get(LockEngine);
    // Several bounded attempts go by while frozen, and none ends the wait.
    await new Promise((resolve) => setTimeout(resolve, COMMAND_TIMEOUT * 3));
    expect(engine.holds.size).toBe(0);
    redis.resume();
    await expect(acquiring).resolves.toBeUndefined();
    expect(await lock.getHoldCount()).toBe(1);
    await lock.unlock();
  });

  it('unlock(), forceUnlock() and the state queries settle within one commandTimeout', async () => {
    const lock = locks.getLock(fresh());
    await lock.lock();
    const outcomes = await whileFrozen(() =>
      Promise.all([
        timed(lock.isLocked()),
        timed(lock.isHeldByCurrentOwner()),
        timed(lock.getHoldCount()),
        timed(lock.remainTimeToLive()),
        timed(lock.forceUnlock()),
        timed(lock.unlock()),
      ]),
    );
    for (const outcome of outcomes) {
      expect(outcome.error).toBeInstanceOf(LockUnavailableError);
      expect(outcome.ms).toBeLessThan(COMMAND_TIMEOUT + 1_500);
    }
    // The release was sent before Redis froze: it applies once Redis resumes.
    const raw = redis.client();
    await waitUntil(async () => (await raw.exists(`lock:{${lock.name}}`)) === 0, 5_000);
  });

  it('a holder frozen out past its lease sees its signal abort with LockLostError, and its release says not held', async () => {
    const name = fresh();
    const lost = deferred<unknown>();
    const release = deferred();
    const running = locks.run(name, async ({ signal }) => {
      signal.addEventListener('abort', () => lost.resolve(signal.reason));
      await release.promise;
      return 'finished';
    });
    await waitUntil(() => app.get(LockEngine).holds.size === 1);
    redis.pause();
    // The watchdog's renewals get no answer until the lease (900 ms) has run out.
    const reason = await lost.promise;
    redis.resume();
    expect(reason).toBeInstanceOf(LockLostError);
    // Redis expires the key once it runs again; another owner takes the lock.
    const other = locks.getLock(name);
    expect(await other.tryLock({ waitTime: 3_000 })).toBe(true);
    release.resolve();
    // fn's outcome stands; the release found nothing of its own and left the new owner's hold alone.
    await expect(running).resolves.toBe('finished');
    await releasesSettled(app);
    expect(await other.getHoldCount()).toBe(1);
    expect(logs.warnings.some((line) => line.includes(name) && line.includes('was lost'))).toBe(true);
    expect(logs.warnings.some((line) => line.includes(name) && line.includes('already gone when its holder released it'))).toBe(true);
    await other.unlock();
  });

  it('application shutdown with held locks settles within its bound while Redis is frozen', async () => {
    const { app: other } = await createFaultApp({ redis: redis.url, commandTimeout: COMMAND_TIMEOUT });
    await other.get(LockService).getLock(fresh()).lock();
    const outcome = await whileFrozen(() => timed(other.close()));
    expect(outcome.error).toBeUndefined();
    expect(outcome.ms).toBeLessThan(COMMAND_TIMEOUT + 3_000);
  });
});
