import type { TestingModule } from '@nestjs/testing';
import type { ChildProcess } from 'node:child_process';
import type Redis from 'ioredis';
import type { Cluster } from 'ioredis';
import { LockService } from '../../lib';
import { printed, spawnFixture } from '../support/child-process';
import { createLockApp } from '../support/lock-app';
import { describeOnCluster, startRedisCluster, TestRedisCluster } from '../support/redis-cluster';
import { startRedis, TestRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

/**
 * DESIGN §19: dead waiters cost one grant lease per crash, not one per waiter. A process with 6
 * plain waiters in line is killed (their deadlines include the holder's TTL, so they stay in line
 * for the whole test); the release hands the lock to one of them. A grant lease is the waiter
 * timeout (below every waiter's own lease).
 */
const GRANT_LEASE_MS = 1_500;
const DEAD_WAITERS = 6;
/** One grant lease, plus the live waiter's wake-up and a generous margin; 6 leases would be 9 s. */
const WITHIN_MS = GRANT_LEASE_MS + 1_500;

type Raw = Redis | Cluster;

async function killedWithWaiters(target: string, raw: Raw, name: string): Promise<void> {
  const child: ChildProcess = spawnFixture('many-waiters', [target, name, String(GRANT_LEASE_MS), String(DEAD_WAITERS)]);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    await printed(child, 'queued');
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
  expect(await raw.zcard(`lock:{${name}}:deadlines`)).toBe(DEAD_WAITERS);
}

/** The holder releases into a line led by dead waiters; resolves with the ms until `live` held it. */
async function liveWaiterDelay(target: string, raw: Raw, holderApp: TestingModule, liveApp: TestingModule, name: string): Promise<number> {
  const holder = holderApp.get(LockService).getLock(name);
  await holder.lock();
  await killedWithWaiters(target, raw, name);
  const live = liveApp.get(LockService).getLock(name);
  const acquired = live.tryLock({ waitTime: 30_000 });
  await waitFor(async () => (await raw.zcard(`lock:{${name}}:deadlines`)) === DEAD_WAITERS + 1, { what: 'the live waiter in line' });
  const releasedAt = Date.now();
  await holder.unlock();
  // The release handed the lock to a dead waiter (the first in line).
  expect(await live.isHeldByCurrentOwner()).toBe(false);
  expect(await raw.exists(`lock:{${name}}`)).toBe(1);
  expect(await acquired).toBe(true);
  const delay = Date.now() - releasedAt;
  await live.unlock();
  return delay;
}

describe('dead waiters (DESIGN §19: one grant lease per crash)', () => {
  let redis: TestRedis;
  let raw: Redis;
  let holderApp: TestingModule;
  let liveApp: TestingModule;
  let seq = 0;
  const fresh = () => `dead-waiters-${++seq}`;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    holderApp = await createLockApp({ redis: redis.url, fairLockWaiterTimeout: GRANT_LEASE_MS });
    liveApp = await createLockApp({ redis: redis.url, fairLockWaiterTimeout: GRANT_LEASE_MS });
  });

  afterAll(async () => {
    await holderApp?.close();
    await liveApp?.close();
    raw?.disconnect();
    await redis?.stop();
  });

  it(`a live waiter gets the lock about one grant lease after the release, not ${DEAD_WAITERS}`, async () => {
    const delay = await liveWaiterDelay(redis.url, raw, holderApp, liveApp, fresh());
    expect(delay).toBeLessThan(WITHIN_MS);
  }, 40_000);

  it.each([
    ['tryLock({ waitTime: 0 })', (app: TestingModule, name: string) => app.get(LockService).getLock(name).tryLock({ waitTime: 0 })],
    [
      'run({ skipIfLocked: true })',
      async (app: TestingModule, name: string) => (await app.get(LockService).run(name, async () => 'ran', { skipIfLocked: true })) === 'ran',
    ],
  ])('%s takes a free lock whose line holds only dead waiters once the dead grantee lease ended', async (_, single) => {
    const name = fresh();
    const holder = holderApp.get(LockService).getLock(name);
    await holder.lock();
    await killedWithWaiters(redis.url, raw, name);
    await holder.unlock();
    // Handed to a dead waiter: wait for the thing itself, the end of that grant's lease.
    await waitFor(async () => (await raw.exists(`lock:{${name}}`)) === 0, { what: 'the dead grantee lease to end' });
    expect(await raw.exists(`lock:{${name}}:line`)).toBe(1);
    const took = await single(liveApp, name);
    expect(took).toBe(true);
    const lock = liveApp.get(LockService).getLock(name);
    if (await lock.isHeldByCurrentOwner()) await lock.unlock();
  }, 40_000);
});

describeOnCluster('dead waiters on a 3-master cluster', () => {
  let cluster: TestRedisCluster;
  let raw: Cluster;
  let holderApp: TestingModule;
  let liveApp: TestingModule;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    raw = cluster.cluster();
    holderApp = await createLockApp({ redis: cluster.cluster(), fairLockWaiterTimeout: GRANT_LEASE_MS });
    liveApp = await createLockApp({ redis: cluster.cluster(), fairLockWaiterTimeout: GRANT_LEASE_MS });
  }, 60_000);

  afterAll(async () => {
    await holderApp?.close();
    await liveApp?.close();
    await cluster?.stop();
  });

  it(`a live waiter gets the plain lock about one grant lease after the release, not ${DEAD_WAITERS}`, async () => {
    const target = `cluster:${cluster.startupNodes.map((n) => `${n.host}:${n.port}`).join(',')}`;
    const delay = await liveWaiterDelay(target, raw, holderApp, liveApp, 'dead-waiters-cluster');
    expect(delay).toBeLessThan(WITHIN_MS);
  }, 60_000);
});
