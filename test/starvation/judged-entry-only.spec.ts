import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockService } from '../../lib';
import { createLockApp } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

/**
 * An entry judged dead by its channel (docs/hand-off-protocol.md#dead-waiters) goes alone: a plain
 * waiter of process A gives up, its seat's UNSUBSCRIBE (subscriber connection) reaches Redis before
 * its line-leave (command connection, held back here until after the release), so the release finds
 * its entry unheard and skips it. A's fair waiter behind it listens on its owner's own channel and is
 * alive: it must be served next, not skipped with its process (found by review; before the fix the
 * client was marked dead and C got the lock first).
 */
describe('a waiter judged unheard takes no other waiter of its process with it', () => {
  let redis: TestRedis;
  let raw: Redis;
  const apps: TestingModule[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    for (let i = 0; i < 3; i++) apps.push(await createLockApp({ redis: redis.url, fairLockWaiterTimeout: 3_000 }));
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    raw?.disconnect();
    await redis?.stop();
  });

  it("A's fair waiter, next in line after A's unheard plain entry, is served before C", async () => {
    const [appA, appB, appC] = apps;
    const name = 'judged-entry-only';
    const lockKey = `lock:{${name}}`;
    const lineLength = async (): Promise<number> => raw.llen(`${lockKey}:line`);
    const holder = appB.get(LockService).getLock(name);
    await holder.lock();

    // A's plain waiter P, whose leave is held back until the release ran.
    let releaseRan!: () => void;
    const afterRelease = new Promise<void>((resolve) => (releaseRan = resolve));
    const plain = appA.get(LockService).getLock(name) as unknown as { leaveLine: (...args: unknown[]) => Promise<unknown> };
    const leaveLine = plain.leaveLine.bind(plain);
    plain.leaveLine = (...args: unknown[]) => afterRelease.then(() => leaveLine(...args));
    const abort = new AbortController();
    const plainWait = (plain as unknown as ReturnType<LockService['getLock']>).tryLock({ waitTime: 30_000, signal: abort.signal }).catch((error: unknown) => error);
    await waitFor(async () => (await lineLength()) === 1, { what: 'P in line' });
    const plainEntry = (await raw.lindex(`${lockKey}:line`, 0))!;
    // P attempted again with its seat subscribed and heard: its record ends in ' s' (it can be judged).
    await waitFor(async () => ((await raw.hget(`${lockKey}:seen`, plainEntry)) ?? '').endsWith(' s'), { what: "P's record marked" });

    const order: string[] = [];
    const fair = appA.get(FairLockService).getLock(name);
    const fairWait = fair.tryLock({ waitTime: 30_000 }).then((ok) => ok && order.push('fair A'));
    await waitFor(async () => (await lineLength()) === 2, { what: 'F in line' });
    const other = appC.get(LockService).getLock(name);
    const otherWait = other.tryLock({ waitTime: 30_000 }).then((ok) => ok && order.push('plain C'));
    await waitFor(async () => (await lineLength()) === 3, { what: 'C in line' });

    abort.abort();
    const plainChannel = `${lockKey}:channel:${plainEntry.split(':')[0]}`;
    await waitFor(async () => Number(((await raw.call('PUBSUB', 'NUMSUB', plainChannel)) as [string, number])[1]) === 0, { what: 'P unsubscribed' });
    await holder.unlock();
    releaseRan();

    await waitFor(() => order.length >= 1, { what: 'a waiter to get the lock' });
    await (order[0] === 'plain C' ? other : fair).unlock();
    await waitFor(() => order.length >= 2, { what: 'both to get it' });
    await (order[1] === 'plain C' ? other : fair).unlock();
    await Promise.all([plainWait, fairWait, otherWait]);
    expect(order).toEqual(['fair A', 'plain C']);
  }, 40_000);
});
