import type { TestingModule } from '@nestjs/testing';
import Redis from 'ioredis';
import { FairLockService, LockService, ReadWriteLockService, type Lock } from '../../lib';
import type { BaseLock } from '../../lib/locks/base-lock';
import { HoldWitness } from '../support/hold-witness';
import { createLockApp, sleep, waitersQueued } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';
import { ReplyDroppingProxy } from '../support/reply-dropping-proxy';

/**
 * A late grant is given back by request (the hold that request was granted), never by owner
 * (docs/hand-off-protocol.md). Found by review: the give-back used to be a plain release of one
 * hold of the owner. When the late grant had already expired in Redis and the same owner (another
 * acquisition on the same lock object) took the lock afresh meanwhile, the give-back released THAT
 * hold: Redis freed the lock (handing it to the next waiter) while the other acquisition's hold
 * stayed live locally, its signal not aborted.
 *
 * Scene (one lock object L = one owner A, in instance A whose pub/sub connection is slow):
 *  1. B holds; A1 = L.tryLock (waits: entry E1 in line).
 *  2. B releases: the release grants the lock to E1 (grant lease 1 s) and publishes granted:E1;
 *     that message reaches instance A 2.5 s later (slow pub/sub path).
 *  3. The grant lease ends unconfirmed (A1 sleeps: it has not heard). The line is empty: gone.
 *  4. A2 = L.tryLock({ waitTime: 0 }) finds the lock free and takes it: A holds, count 1, rq = A2.
 *  5. C (instance B, another owner) waits in line.
 *  6. The message arrives; A1 dates it correctly, finds its lease over and gives it back with a
 *     plain release of owner A: count 1 -> 0, the lock goes to C, whose body starts while A2's hold
 *     still has a live signal (the watchdog notices only at its next round, up to 10 s later).
 *
 * The give-back now releases only what `requestId` was granted (its last applied request, or the
 * request the line handed the lock to).
 */
type Kind = 'reentrant' | 'fair' | 'write';
function lockOf(kind: Kind, app: TestingModule, name: string): Lock {
  if (kind === 'fair') return app.get(FairLockService).getLock(name);
  if (kind === 'write') return app.get(ReadWriteLockService).getReadWriteLock(name).writeLock();
  return app.get(LockService).getLock(name);
}

describe.each<Kind>(['reentrant', 'write'])('REVIEW (%s): a late grant given back by a plain release frees another acquisition of the same owner', (kind) => {
  let redis: TestRedis;
  let proxy: ReplyDroppingProxy;
  let clientA: Redis;
  let apps: TestingModule[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    proxy = await ReplyDroppingProxy.start(redis.port);
  });
  afterEach(async () => {
    for (const app of apps) await app.close().catch(() => undefined);
    apps = [];
    clientA?.disconnect();
  });
  afterAll(async () => {
    await proxy?.close();
    await redis?.stop();
  });

  it('no body of another owner starts while the owner’s fresh hold has a live signal', async () => {
    clientA = new Redis(proxy.url);
    const common = { fairLockWaiterTimeout: 1_000 };
    const appA = await createLockApp({ redis: clientA, ...common });
    const appB = await createLockApp({ redis: redis.url, ...common });
    apps = [appA, appB];
    const name = `late-undo-${kind}`;
    const resource = `lock:{${name}}`;
    const raw = redis.client();
    const witness = new HoldWitness();

    const b = lockOf(kind, appB, name);
    await b.lock();
    const l = lockOf(kind, appA, name) as BaseLock;
    const a1 = l.tryLock({ waitTime: 20_000 });
    await waitersQueued(appA, 1);

    proxy.pubSubDelayMs = 2_500;
    await b.unlock(); // grants to E1 (1 s grant lease); the message is on its (slow) way
    await sleep(1_300); // the grant lease ran out unconfirmed

    // A second acquisition of the same owner finds the lock free and takes it.
    expect(await l.tryLock({ waitTime: 0 })).toBe(true);
    const a2Hold = l.hold!;
    witness.enter('A2', resource, a2Hold.signal);
    expect(await l.isHeldByCurrentOwner()).toBe(true);

    // Another owner waits in line.
    const c = lockOf(kind, appB, name) as BaseLock;
    const cAcquired = c.tryLock({ waitTime: 15_000 });
    await waitersQueued(appB, 1);
    proxy.pubSubDelayMs = 0;

    const gotIt = await cAcquired;
    if (gotIt) witness.enter('C', resource, c.hold!.signal);
    const heldByA = await l.isHeldByCurrentOwner();
    const a2Aborted = a2Hold.signal.aborted;
    const violations = witness.violations();

    // Clean up (both may think they hold).
    await c.unlock().catch(() => undefined);
    await a1.then((ok) => (ok ? l.unlock().catch(() => undefined) : undefined));
    await l.unlock().catch(() => undefined);
    raw.disconnect();

    expect(violations).toEqual([]);
    expect({ cAcquiredWhileA2Held: gotIt, heldByAInRedis: heldByA, a2SignalAborted: a2Aborted }).toEqual({
      cAcquiredWhileA2Held: false,
      heldByAInRedis: true,
      a2SignalAborted: false,
    });
  }, 40_000);
});
