import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService } from '../../lib';
import { LockKeys } from '../../lib/redis/lock-keys';
import { LockEngine } from '../../lib/runtime/lock-engine';
import { createLockApp, sleep, waitersQueued } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * Adversarial review of 863758a ("a release with nobody in line publishes nothing").
 *
 * A live waiter can stand outside the line while it sleeps: line-live-head pops every entry of a
 * client marked dead (`~dead:<client id>` in the last-attempts hash, written by line-failed-grantee
 * when a grant to one of that client's owners ran out: the client stalled, or its connection was
 * slow, past one short grant lease). The popped waiter is not told; a plain waiter sleeps until the
 * TTL it was told at its last attempt (up to the holder's lease: watchdogTimeout, or a leaseTime).
 * Before 863758a, the release that found no line published an unlock message on the lock's channel,
 * which woke it; now nothing does, and the lock stays free while it sleeps.
 *
 * Here the dead mark is written directly (the state line-failed-grantee leaves after a grantee of
 * this client missed its grant lease); everything else is the library's own flow.
 */
describe('a live waiter popped from the line (its client marked dead) is woken when the lock is free', () => {
  let redis: TestRedis;
  let raw: Redis;
  let holderApp: TestingModule;
  let popped: TestingModule;
  let otherApp: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    holderApp = await createLockApp({ redis: redis.url, watchdogTimeout: 30_000 });
    popped = await createLockApp({ redis: redis.url, watchdogTimeout: 30_000 });
    otherApp = await createLockApp({ redis: redis.url, watchdogTimeout: 30_000 });
  });
  afterAll(async () => {
    raw?.disconnect();
    await otherApp?.close();
    await popped?.close();
    await holderApp?.close();
    await redis?.stop();
  });

  it('gets the lock within a few seconds of it being free, not at the end of the TTL it was told', async () => {
    const name = 'out-of-line-waiter';
    const lockKey = `lock:{${name}}`;
    const [, , seenKey] = LockKeys.lineKeys(lockKey);

    const holder = holderApp.get(LockService).getLock(name);
    await holder.lock(); // TTL ~30 s: a plain waiter sleeps that long

    const waiter = popped.get(LockService).getLock(name);
    const waiting = waiter.tryLock({ waitTime: 60_000 });
    await waitersQueued(popped);
    // Until its subscription is confirmed a waiter retries at a short back-off (at most 1 s); after
    // that it sleeps until the TTL it was told.
    await sleep(1_500);
    await waitersQueued(popped);
    const other = otherApp.get(LockService).getLock(name);
    const otherWaiting = other.tryLock({ waitTime: 60_000 });
    await waitersQueued(otherApp);

    // The waiter's client is marked dead (a grant to another of its owners ran out before).
    const poppedClient = popped.get(LockEngine).ids.clientId;
    await raw.hset(seenKey, `~dead:${poppedClient}`, Date.now());

    // The holder releases: the line skips the "dead" client's entry and hands the lock to `other`.
    await holder.unlock();
    expect(await otherWaiting).toBe(true);
    // `other` releases: no line remains behind it.
    const freedAt = Date.now();
    await other.unlock();

    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      waiting.then((acquired) => (acquired ? Date.now() - freedAt : -1)),
      new Promise<number>((resolve) => (timer = setTimeout(() => resolve(Number.POSITIVE_INFINITY), 45_000))),
    ]);
    clearTimeout(timer);
    // Before 863758a the release published on the lock's channel and the waiter took it at once (~30 ms);
    // under 863758a it sleeps out the TTL it was told (~30 s: the holder's watchdog lease).
    expect(outcome).toBeLessThan(5_000);
    await waiting.then((acquired) => (acquired ? waiter.unlock() : undefined)).catch(() => undefined);
  }, 90_000);
});
