import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService } from '../../lib';
import { LockKeys } from '../../lib/redis/lock-keys';
import { LockEngine } from '../../lib/runtime/lock-engine';
import { createLockApp, sleep, waitersQueued } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * Adversarial review (after 10cee92, which makes a release whose line is gone publish one wake-up):
 * two live waiters of one process dropped from the line together (their client marked dead). The
 * release whose line is gone wakes ONE waiter of that process (the 'one' message); it takes the
 * free lock through the plain free path, so its hold has no '~line', and its release publishes
 * nothing: the second dropped waiter sleeps out the TTL it was told (~30 s, the holder's watchdog
 * lease) while the lock is free. Before 863758a every release that found no line published, and the
 * second waiter was woken by the first one's release.
 */
describe('two live waiters of one process popped from the line are both woken while the lock is free', () => {
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

  it('the second one gets the lock within a few seconds of the first one releasing it', async () => {
    const name = 'out-of-line-waiters-two';
    const lockKey = `lock:{${name}}`;
    const [, , seenKey] = LockKeys.lineKeys(lockKey);

    const holder = holderApp.get(LockService).getLock(name);
    await holder.lock(); // TTL ~30 s: a plain waiter sleeps that long

    const first = popped.get(LockService).getLock(name);
    const second = popped.get(LockService).getLock(name);
    const firstWaiting = first.tryLock({ waitTime: 60_000 });
    const secondWaiting = second.tryLock({ waitTime: 60_000 });
    await waitersQueued(popped, 2);
    // Until its subscription is confirmed a waiter retries at a short back-off; then it sleeps until the TTL.
    await sleep(1_500);
    await waitersQueued(popped, 2);
    const other = otherApp.get(LockService).getLock(name);
    const otherWaiting = other.tryLock({ waitTime: 60_000 });
    await waitersQueued(otherApp);

    // The waiters' client is marked dead (a grant to another of its owners ran out before).
    await raw.hset(seenKey, `~dead:${popped.get(LockEngine).ids.clientId}`, Date.now());

    await holder.unlock(); // the line skips the "dead" client's entries, hands the lock to `other`
    expect(await otherWaiting).toBe(true);
    await other.unlock(); // the line is gone: one waiter of the popped process is woken

    // Whichever of the two is woken takes the lock and releases it at once.
    const winner = await Promise.race([firstWaiting.then(() => first), secondWaiting.then(() => second)]);
    const loser = winner === first ? secondWaiting : firstWaiting;
    const freedAt = Date.now();
    await winner.unlock();

    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      loser.then((acquired) => (acquired ? Date.now() - freedAt : -1)),
      new Promise<number>((resolve) => (timer = setTimeout(() => resolve(Number.POSITIVE_INFINITY), 45_000))),
    ]);
    clearTimeout(timer);
    await loser.then((acquired) => (acquired ? (winner === first ? second : first).unlock() : undefined)).catch(() => undefined);
    // Before 863758a: taken at once. Under 10cee92: ~30 s later (the TTL it was told).
    expect(outcome).toBeLessThan(5_000);
  }, 120_000);
});
