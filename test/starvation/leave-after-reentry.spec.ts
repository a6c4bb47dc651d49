import type { TestingModule } from '@nestjs/testing';
import Redis from 'ioredis';
import { LockService } from '../../lib';
import type { BaseLock } from '../../lib/locks/base-lock';
import { createLockApp, waitersQueued } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';
import { ReplyDroppingProxy } from '../support/reply-dropping-proxy';

/**
 * A grant handed to an acquisition that gives up is given back, even after a re-entry of the same
 * owner (docs/hand-off-protocol.md). Found by review: line-leave.lua gave back a grant only when the
 * owner's `rq` field was still the leaving acquisition's request id. A re-entry of the same owner (a second acquisition on the same lock
 * object, which by design "re-enters once the first gets in") overwrites `rq`. So when the first
 * acquisition was handed the lock by a release, the second re-entered on that grant, and the first
 * then gives up before hearing of its grant (cancelled, or its wait ran out), its hold is never
 * given back: after the second releases, a hold nobody has stays in Redis until its TTL (the second
 * acquisition's full lease, 30 s by default), and every other waiter waits that long for a lock
 * nobody holds. When it finally expires, `~grant` is still there: the owner's whole client is
 * marked dead and its other waiters lose their places.
 *
 * The line now keeps the handed grant's request apart (`<owner>:handed:rq`, which a re-entry does
 * not overwrite): line-leave and an undo give back exactly that hold.
 */
describe('A grant handed to an acquisition that then gives up leaves no ghost hold after a re-entry', () => {
  let redis: TestRedis;
  let proxy: ReplyDroppingProxy;
  let clientA: Redis;
  let apps: TestingModule[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    proxy = await ReplyDroppingProxy.start(redis.port);
  });
  afterAll(async () => {
    for (const app of apps) await app.close().catch(() => undefined);
    clientA?.disconnect();
    await proxy?.close();
    await redis?.stop();
  });

  it('once every acquisition of the owner is over, another owner gets the lock at once', async () => {
    clientA = new Redis(proxy.url);
    const common = { fairLockWaiterTimeout: 1_000 };
    const appA = await createLockApp({ redis: clientA, ...common });
    const appB = await createLockApp({ redis: redis.url, ...common });
    apps = [appA, appB];
    const name = 'leave-after-reentry';
    const raw = redis.client();

    const b = appB.get(LockService).getLock(name);
    await b.lock();
    const l = appA.get(LockService).getLock(name);
    const abort = new AbortController();
    const a1 = l.tryLock({ waitTime: 20_000, signal: abort.signal });
    a1.catch(() => undefined);
    await waitersQueued(appA, 1);

    proxy.pubSubDelayMs = 3_000; // the grant message to instance A is slow
    await b.unlock(); // hands the lock to A1's entry (A holds, rq = A1)
    // A second acquisition of the same owner re-enters on that grant (rq = A2 now).
    expect(await l.tryLock({ waitTime: 0 })).toBe(true);
    // A1 gives up before hearing of its grant: line-leave finds rq = A2 and gives nothing back.
    abort.abort();
    await expect(a1).rejects.toBeDefined();
    await l.unlock(); // A2 done: A has no acquisition left
    proxy.pubSubDelayMs = 0;

    const state = { holdCount: await raw.hget(`lock:{${name}}`, (l as unknown as BaseLock).ownerId), pttl: await raw.pttl(`lock:{${name}}`) };
    const c = appB.get(LockService).getLock(name);
    const started = performance.now();
    const got = await c.tryLock({ waitTime: 3_000 });
    const waited = Math.round(performance.now() - started);
    if (got) await c.unlock();
    raw.disconnect();
    expect({ got, state }).toEqual({ got: true, state: { holdCount: null, pttl: -2 } });
    expect(waited).toBeLessThan(1_000);
  }, 40_000);
});
