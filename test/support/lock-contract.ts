import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { Lock, LockLostError, LockModuleOptions, LockNotHeldError, LockRunContext, LockTimeoutError, RunOptions } from '../../lib';
import { createLockApp, deferred, sleep, waitersQueued, waitUntil } from './lock-app';
import { startRedis, TestRedis } from './redis-server';

/** How the contract reaches one lock kind. */
export interface LockKind {
  readonly kind: string;
  make(app: TestingModule, name: string): Lock;
  run<T>(app: TestingModule, name: string, fn: (context: LockRunContext) => Promise<T>, options?: RunOptions): Promise<T>;
  /** The Redis key holding the lock's state. */
  redisKey(name: string): string;
  /** Module options the kind needs besides `redis` (e.g. RedLock's masters), given the suite's server URL. */
  moduleOptions?(redisUrl: string): Partial<LockModuleOptions>;
  /** A kind that waits by retrying (RedLock) has no subscriber seat to observe while it waits. */
  waitsByRetrying?: boolean;
}

export const WATCHDOG_MS = 600;

/**
 * The behaviour every exclusive lock kind shares (ShedLock's idea: one suite, every kind). Runs
 * against a real Redis with a short watchdog so renewal and expiry take a few hundred ms.
 */
export function describeLockContract(kind: LockKind): void {
  describe(`${kind.kind}: lock contract`, () => {
    let redis: TestRedis;
    let app: TestingModule;
    let other: TestingModule; // a second module instance: another process, as far as Redis can tell
    let raw: Redis;
    let seq = 0;
    const fresh = () => `${kind.kind}-${++seq}`;
    /** Until a caller of `moduleRef` is waiting for a lock (a retrying kind: a few of its retries). */
    const waiting = (moduleRef: TestingModule) => (kind.waitsByRetrying ? sleep(200) : waitersQueued(moduleRef));

    beforeAll(async () => {
      redis = await startRedis();
      raw = redis.client();
      const options = { redis: redis.url, watchdogTimeout: WATCHDOG_MS, ...kind.moduleOptions?.(redis.url) };
      app = await createLockApp(options);
      other = await createLockApp(options);
    });
    afterAll(async () => {
      await app?.close();
      await other?.close();
      await redis?.stop();
    });

    it('re-enters: the hold count rises and falls, and the key goes only at the last unlock', async () => {
      const name = fresh();
      const lock = kind.make(app, name);
      await lock.lock();
      await lock.lock();
      expect(await lock.getHoldCount()).toBe(2);
      expect(await lock.isHeldByCurrentOwner()).toBe(true);
      await lock.unlock();
      expect(await lock.getHoldCount()).toBe(1);
      expect(await lock.isLocked()).toBe(true);
      await lock.unlock();
      expect(await lock.getHoldCount()).toBe(0);
      expect(await lock.isLocked()).toBe(false);
      expect(await raw.exists(kind.redisKey(name))).toBe(0);
      expect(await lock.remainTimeToLive()).toBe(-2);
    });

    it('two lock objects exclude each other, in one module and across modules', async () => {
      const name = fresh();
      const first = kind.make(app, name);
      await first.lock();
      expect(await kind.make(app, name).tryLock()).toBe(false);
      expect(await kind.make(other, name).tryLock({ waitTime: 50 })).toBe(false);
      await first.unlock();
      const second = kind.make(other, name);
      expect(await second.tryLock()).toBe(true);
      await second.unlock();
    });

    it('unlock by a non-owner rejects with LockNotHeldError and the lock stays', async () => {
      const name = fresh();
      const holder = kind.make(app, name);
      await holder.lock();
      await expect(kind.make(other, name).unlock()).rejects.toBeInstanceOf(LockNotHeldError);
      await expect(kind.make(app, name).unlock()).rejects.toBeInstanceOf(LockNotHeldError);
      expect(await holder.isHeldByCurrentOwner()).toBe(true);
      expect(await holder.isLocked()).toBe(true);
      await holder.unlock();
    });

    it('a leaseTime lock expires by itself and is not renewed', async () => {
      const name = fresh();
      const lock = kind.make(app, name);
      await lock.lock({ leaseTime: 300 });
      const ttl = await lock.remainTimeToLive();
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(300);
      await waitUntil(async () => !(await lock.isLocked()), 5_000);
      expect(await kind.make(other, name).tryLock()).toBe(true);
    });

    it('without leaseTime the watchdog keeps the lock well past watchdogTimeout', async () => {
      const name = fresh();
      const lock = kind.make(app, name);
      await lock.lock();
      const until = Date.now() + WATCHDOG_MS * 4;
      while (Date.now() < until) {
        expect(await lock.isLocked()).toBe(true);
        await sleep(WATCHDOG_MS / 4);
      }
      expect(await kind.make(other, name).tryLock()).toBe(false);
      await lock.unlock();
      expect(await lock.isLocked()).toBe(false);
    });

    it('hands off by pub/sub: a waiter gets the lock right after unlock, not at lease expiry', async () => {
      const name = fresh();
      const holder = kind.make(app, name);
      await holder.lock({ leaseTime: 10_000 });
      const waiter = kind.make(other, name);
      const acquired = waiter.tryLock({ waitTime: 8_000 });
      await waiting(other);
      const releasedAt = Date.now();
      await holder.unlock();
      expect(await acquired).toBe(true);
      // Far below the 10 s lease; generous for a loaded CI machine.
      expect(Date.now() - releasedAt).toBeLessThan(1_000);
      await waiter.unlock();
    });

    it('tryLock with waitTime 0 or a short waitTime on a busy lock resolves false', async () => {
      const name = fresh();
      const holder = kind.make(app, name);
      await holder.lock();
      expect(await kind.make(other, name).tryLock({ waitTime: 0 })).toBe(false);
      const started = Date.now();
      expect(await kind.make(other, name).tryLock({ waitTime: 150 })).toBe(false);
      expect(Date.now() - started).toBeGreaterThanOrEqual(140);
      await holder.unlock();
    });

    it('run throws LockTimeoutError on a busy lock and never calls fn', async () => {
      const name = fresh();
      const holder = kind.make(app, name);
      await holder.lock();
      const fn = jest.fn(async () => 'ran');
      const error = await kind.run(other, name, fn, { waitTime: 100 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockTimeoutError);
      expect((error as LockTimeoutError).lockName).toBe(name);
      expect(fn).not.toHaveBeenCalled();
      await holder.unlock();
    });

    it('run returns fn result, and releases and rethrows the same error when fn throws', async () => {
      const name = fresh();
      expect(await kind.run(app, name, async ({ name: given }) => `ok:${String(given)}`)).toBe(`ok:${name}`);
      const thrown = new Error('boom');
      await expect(
        kind.run(app, name, async () => {
          expect(await kind.make(other, name).tryLock()).toBe(false); // held during fn
          throw thrown;
        }),
      ).rejects.toBe(thrown);
      expect(await raw.exists(kind.redisKey(name))).toBe(0);
      expect(await kind.make(other, name).tryLock()).toBe(true);
    });

    it('nested run on the same name re-enters instead of deadlocking', async () => {
      const name = fresh();
      const result = await kind.run(app, name, () =>
        kind.run(app, name, async () => kind.make(app, name).getHoldCount(), { waitTime: 200 }),
      );
      expect(result).toBe(2);
      expect(await raw.exists(kind.redisKey(name))).toBe(0);
    });

    it('concurrent branches of one call chain asking for another lock exclude each other', async () => {
      const outer = fresh();
      const inner = fresh();
      let inside = 0;
      let maxInside = 0;
      await kind.run(app, outer, () =>
        Promise.all(
          [1, 2, 3].map(() =>
            kind.run(
              app,
              inner,
              async () => {
                maxInside = Math.max(maxInside, ++inside);
                await sleep(30);
                inside--;
              },
              { waitTime: 5_000 },
            ),
          ),
        ),
      );
      expect(maxInside).toBe(1);
    });

    it('detects a lock deleted behind its holder: signal aborts with LockLostError', async () => {
      const name = fresh();
      const gate = deferred();
      let seen: AbortSignal | undefined;
      const running = kind.run(app, name, async ({ signal }) => {
        seen = signal;
        await gate.promise;
        return 'finished anyway';
      });
      await waitUntil(() => seen !== undefined);
      expect(seen!.aborted).toBe(false);
      await raw.del(kind.redisKey(name));
      await waitUntil(() => seen!.aborted, WATCHDOG_MS * 5);
      expect(seen!.reason).toBeInstanceOf(LockLostError);
      gate.resolve();
      // fn completed anyway: its outcome is run's outcome, and the empty release does not throw.
      await expect(running).resolves.toBe('finished anyway');
    });

    it('forceUnlock frees a lock held by someone else and wakes its waiter', async () => {
      const name = fresh();
      const holder = kind.make(app, name);
      await holder.lock();
      const acquired = kind.make(other, name).tryLock({ waitTime: 5_000 });
      await waiting(other);
      expect(await kind.make(other, name).forceUnlock()).toBe(true);
      expect(await acquired).toBe(true);
      expect(await kind.make(other, name).forceUnlock()).toBe(true);
      expect(await kind.make(other, name).forceUnlock()).toBe(false);
    });
  });
}
