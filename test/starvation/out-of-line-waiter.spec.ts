import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService, type Lock } from '../../lib';
import { LockKeys } from '../../lib/redis/lock-keys';
import { LockEngine } from '../../lib/engine/lock-engine';
import { createLockApp, waitersQueued, waitUntil } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * Found by review of the lean path (a release of a hold nobody lined up behind publishes nothing).
 *
 * A live waiter can stand outside the line while it sleeps: line-live-head pops every entry of a
 * client marked dead (`~dead:<client id>` in the last-attempts hash, written by line-failed-grantee
 * when a grant to one of that client's owners ran out: the client stalled, or its connection was
 * slow, past one short grant lease). The popped waiter is not told; a plain waiter sleeps until the
 * TTL it was told at its last attempt (the holder's lease: 30 s here). A release whose hold had a line
 * behind it that is now gone wakes the lock's channel with 'all': every such waiter of a process, as
 * the one that takes the lock takes it without a line and its release publishes nothing.
 *
 * The dead mark is written directly (the state line-failed-grantee leaves after a grantee of this
 * client missed its grant lease); everything else is the library's own flow.
 */
describe('live waiters popped from the line (their client marked dead) are woken when the lock is free', () => {
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

  /**
   * `count` waiters of the popped process wait on `name` behind a holder, asleep on a subscribed
   * channel (so until the TTL they were told); the process is marked dead and the holder's release
   * hands the lock past them to a waiter of another process, which releases it: the line is gone.
   * Returns the popped waiters' locks and acquisitions.
   */
  async function dropFromLine(name: string, count: number): Promise<Array<{ lock: Lock; waiting: Promise<boolean> }>> {
    const [, , seenKey] = LockKeys.lineKeys(`lock:{${name}}`);
    const holder = holderApp.get(LockService).getLock(name);
    await holder.lock(); // TTL ~30 s: a plain waiter sleeps that long
    const waiters = Array.from({ length: count }, () => {
      const lock = popped.get(LockService).getLock(name);
      return { lock, waiting: lock.tryLock({ waitTime: 60_000 }) };
    });
    await waitersQueued(popped, count);
    // Until its subscription is active a waiter retries at a short back-off; then it sleeps out the TTL.
    const subscriber = popped.get(LockEngine).subscriber as unknown as { channels: Map<string, { active?: boolean }>; sleepingCount(): number };
    await waitUntil(() => [...subscriber.channels.values()].every((seats) => seats.active) && subscriber.sleepingCount() === count);
    const other = otherApp.get(LockService).getLock(name);
    const otherWaiting = other.tryLock({ waitTime: 60_000 });
    await waitersQueued(otherApp);

    await raw.hset(seenKey, `~dead:${popped.get(LockEngine).ids.clientId}`, Date.now());
    await holder.unlock(); // the line skips the "dead" client's entries and hands the lock to `other`
    expect(await otherWaiting).toBe(true);
    await other.unlock(); // no line remains behind it
    return waiters;
  }

  /** Ms from now until `waiting` got the lock (Infinity past 45 s, the TTL it was told being 30 s). */
  async function msUntilAcquired(waiting: Promise<boolean>): Promise<number> {
    const from = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      waiting.then((acquired) => (acquired ? Date.now() - from : -1)),
      new Promise<number>((resolve) => (timer = setTimeout(() => resolve(Number.POSITIVE_INFINITY), 45_000))),
    ]);
    clearTimeout(timer);
    return outcome;
  }

  it('one waiter gets the lock within a few seconds of it being free, not at the end of the TTL it was told', async () => {
    const [waiter] = await dropFromLine('out-of-line-waiter', 1);
    const outcome = await msUntilAcquired(waiter.waiting);
    await waiter.waiting.then((acquired) => (acquired ? waiter.lock.unlock() : undefined)).catch(() => undefined);
    expect(outcome).toBeGreaterThanOrEqual(0);
    expect(outcome).toBeLessThan(5_000);
  }, 90_000);

  it('two waiters of one process: the second gets it within a few seconds of the first releasing it', async () => {
    const [first, second] = await dropFromLine('out-of-line-waiters-two', 2);
    // Whichever is woken takes the lock and releases it at once.
    const winner = await Promise.race([first.waiting.then(() => first), second.waiting.then(() => second)]);
    const loser = winner === first ? second : first;
    await winner.lock.unlock();
    const outcome = await msUntilAcquired(loser.waiting);
    await loser.waiting.then((acquired) => (acquired ? loser.lock.unlock() : undefined)).catch(() => undefined);
    expect(outcome).toBeGreaterThanOrEqual(0);
    expect(outcome).toBeLessThan(5_000);
  }, 120_000);
});
