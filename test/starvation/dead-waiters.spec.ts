import type { TestingModule } from '@nestjs/testing';
import type { ChildProcess } from 'node:child_process';
import type Redis from 'ioredis';
import type { Cluster } from 'ioredis';
import { FairLockService, LockService, ReadWriteLockService } from '../../lib';
import { LockKeys } from '../../lib/redis/lock-keys';
import { LuaScript } from '../../lib/redis/lua-script';
import { printed, spawnFixture } from '../support/child-process';
import { DelayRelay } from '../support/delay-relay';
import { createLockApp } from '../support/lock-app';
import { describeOnCluster, shardSubscribers, startRedisCluster, TestRedisCluster } from '../support/redis-cluster';
import { startRedis, TestRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

/**
 * Dead waiters (docs/hand-off-protocol.md#dead-waiters). A process with 6 plain waiters in line is
 * killed (their deadlines include the holder's TTL, so they stay in line for the whole test).
 * Waiters that attempted once their seat was subscribed are judged by their channel: nobody hears
 * it once the process is gone, so the release skips them all and a dead crash costs nothing. Waiters
 * that had not (a newcomer joins before it subscribes; here their records are rewritten to look so)
 * cost one grant lease per crash, not one per waiter: the release hands the lock to one of them,
 * whose lease (the waiter timeout) must run out before its client's entries are skipped together.
 */
const GRANT_LEASE_MS = 1_500;
const DEAD_WAITERS = 6;
/** One grant lease, plus the live waiter's wake-up and a generous margin; 6 leases would be 9 s. */
const WITHIN_MS = GRANT_LEASE_MS + 1_500;

type Raw = Redis | Cluster;
/** How many subscribers Redis counts on a channel (NUMSUB, or SHARDNUMSUB on the lock's master). */
type Listeners = (channel: string) => Promise<number>;

interface Crash {
  /** The dead process's channel for the lock (where grants to its plain waiters go). */
  readonly channel: string;
}

/** Every entry's last-attempt record, by entry. */
async function records(raw: Raw, lockKey: string): Promise<string[]> {
  const entries = await raw.lrange(`${lockKey}:line`, 0, -1);
  return Promise.all(entries.map(async (entry) => (await raw.hget(`${lockKey}:seen`, entry)) ?? ''));
}

/**
 * Spawns the 6 waiters, waits until each attempted with its seat subscribed (its record ends in
 * ' s'), kills the process and waits until Redis shows its subscription gone. With `unjudged`, the
 * records lose that mark afterwards: waiters killed before they attempted since subscribing.
 */
async function killedWithWaiters(target: string, raw: Raw, listeners: Listeners, name: string, unjudged = false, kind = 'plain'): Promise<Crash> {
  const lockKey = kind === 'write' ? `lock:rw:{${name}}` : `lock:{${name}}`;
  const child: ChildProcess = spawnFixture('many-waiters', [target, name, String(GRANT_LEASE_MS), String(DEAD_WAITERS), kind]);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    await printed(child, 'queued');
    await waitFor(async () => (await records(raw, lockKey)).filter((record) => record.endsWith(' s')).length === DEAD_WAITERS, {
      what: 'every dead-to-be waiter to attempt with its seat subscribed',
    });
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
  const entries = await raw.lrange(`${lockKey}:line`, 0, -1);
  expect(entries).toHaveLength(DEAD_WAITERS);
  const client = (/^(\S+):\d+ /.exec(entries[0]) as RegExpExecArray)[1];
  const channel = LockKeys.clientChannel(lockKey, client);
  await waitFor(async () => (await listeners(channel)) === 0, { what: "the killed process's subscription to end" });
  if (unjudged) {
    for (const entry of entries) {
      const record = (await raw.hget(`${lockKey}:seen`, entry)) as string;
      await raw.hset(`${lockKey}:seen`, entry, record.replace(/ s$/, ''));
    }
  }
  return { channel };
}

/** The holder releases into a line led by dead waiters; resolves with the ms until `live` held it. */
async function liveWaiterDelay(
  target: string,
  raw: Raw,
  listeners: Listeners,
  apps: { holder: TestingModule; live: TestingModule },
  name: string,
  unjudged: boolean,
): Promise<number> {
  const holder = apps.holder.get(LockService).getLock(name);
  await holder.lock();
  await killedWithWaiters(target, raw, listeners, name, unjudged);
  const live = apps.live.get(LockService).getLock(name);
  const acquired = live.tryLock({ waitTime: 30_000 });
  await waitFor(async () => (await raw.zcard(`lock:{${name}}:deadlines`)) === DEAD_WAITERS + 1, { what: 'the live waiter in line' });
  const releasedAt = Date.now();
  await holder.unlock();
  if (unjudged) {
    // The release handed the lock to a dead waiter (the first in line): nothing tells it is dead yet.
    expect(await live.isHeldByCurrentOwner()).toBe(false);
    expect(await raw.exists(`lock:{${name}}`)).toBe(1);
  } else {
    // The release skipped the dead waiters together and handed the lock to the live one at once.
    expect(await raw.zcard(`lock:{${name}}:deadlines`)).toBe(0);
  }
  expect(await acquired).toBe(true);
  const delay = Date.now() - releasedAt;
  await live.unlock();
  return delay;
}

const singles = [
  ['tryLock({ waitTime: 0 })', (app: TestingModule, name: string) => app.get(LockService).getLock(name).tryLock({ waitTime: 0 })],
  [
    'run({ skipIfLocked: true })',
    async (app: TestingModule, name: string) => (await app.get(LockService).run(name, async () => 'ran', { skipIfLocked: true })) === 'ran',
  ],
] as const;

describe('dead waiters (docs/hand-off-protocol.md#dead-waiters)', () => {
  let redis: TestRedis;
  let raw: Redis;
  let holderApp: TestingModule;
  let liveApp: TestingModule;
  /** A live process 300 ms away from Redis each way: its newcomer stands unheard for ~600 ms. */
  let relay: DelayRelay;
  let farApp: TestingModule;
  let listeners: Listeners;
  let seq = 0;
  const fresh = () => `dead-waiters-${++seq}`;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    listeners = async (channel) => Number(((await raw.call('PUBSUB', 'NUMSUB', channel)) as [string, number])[1]);
    holderApp = await createLockApp({ redis: redis.url, fairLockWaiterTimeout: GRANT_LEASE_MS });
    liveApp = await createLockApp({ redis: redis.url, fairLockWaiterTimeout: GRANT_LEASE_MS });
    relay = await DelayRelay.start(redis.port, 300);
    farApp = await createLockApp({ redis: relay.url, fairLockWaiterTimeout: 10_000, commandTimeout: 5_000 });
  });

  afterAll(async () => {
    await holderApp?.close();
    await liveApp?.close();
    await farApp?.close();
    await relay?.stop();
    raw?.disconnect();
    await redis?.stop();
  });

  describe('whose seats were subscribed: nobody hears their channel, they cost no grant lease', () => {
    it('the release hands the lock to the live waiter behind them at once', async () => {
      const delay = await liveWaiterDelay(redis.url, raw, listeners, { holder: holderApp, live: liveApp }, fresh(), false);
      expect(delay).toBeLessThan(GRANT_LEASE_MS);
    }, 40_000);

    it.each(singles)('%s takes the lock the holder released into a line of only dead waiters', async (_, single) => {
      const name = fresh();
      const holder = holderApp.get(LockService).getLock(name);
      await holder.lock();
      await killedWithWaiters(redis.url, raw, listeners, name);
      await holder.unlock();
      const took = await single(liveApp, name);
      expect(took).toBe(true);
      const lock = liveApp.get(LockService).getLock(name);
      if (await lock.isHeldByCurrentOwner()) await lock.unlock();
    }, 40_000);

    it.each(singles)('%s is the first attempt after the crash: it takes a lock whose lease ran out with only dead waiters in line', async (_, single) => {
      const name = fresh();
      const holder = holderApp.get(LockService).getLock(name);
      await holder.lock({ leaseTime: 60_000 });
      await killedWithWaiters(redis.url, raw, listeners, name);
      // The holder's lease runs out (ended now rather than waited out): nothing ran in Redis since.
      await raw.pexpire(`lock:{${name}}`, 1);
      await waitFor(async () => (await raw.exists(`lock:{${name}}`)) === 0, { what: "the holder's lease to end" });
      expect(await raw.llen(`lock:{${name}}:line`)).toBe(DEAD_WAITERS);
      const took = await single(liveApp, name);
      expect(took).toBe(true);
      const lock = liveApp.get(LockService).getLock(name);
      if (await lock.isHeldByCurrentOwner()) await lock.unlock();
    }, 40_000);
  });

  it('read-write: tryLock({ waitTime: 0 }) takes the write lock released into a line of only dead writers', async () => {
    const name = fresh();
    const holder = holderApp.get(ReadWriteLockService).getReadWriteLock(name).writeLock();
    await holder.lock();
    await killedWithWaiters(redis.url, raw, listeners, name, false, 'write');
    await holder.unlock();
    const writer = liveApp.get(ReadWriteLockService).getReadWriteLock(name).writeLock();
    expect(await writer.tryLock({ waitTime: 0 })).toBe(true);
    await writer.unlock();
  }, 40_000);

  it('a live waiter judged dead (its subscriber connection killed) loses its place only: it gets the lock once back', async () => {
    const name = fresh();
    const lockKey = `lock:{${name}}`;
    const holder = holderApp.get(LockService).getLock(name);
    await holder.lock();
    const live = liveApp.get(LockService).getLock(name);
    const acquired = live.tryLock({ waitTime: 30_000 });
    await waitFor(async () => (await records(raw, lockKey)).filter((record) => record.endsWith(' s')).length === 1, {
      what: 'the live waiter to attempt with its seat subscribed',
    });
    const client = (/^(\S+):\d+ /.exec((await raw.lrange(LockKeys.line(lockKey), 0, 0))[0]) as RegExpExecArray)[1];
    const channel = LockKeys.clientChannel(lockKey, client);
    // A network blip: Redis closes the subscriber connection (ioredis reconnects soon after).
    await raw.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    expect(await listeners(channel)).toBe(0);
    await holder.unlock();
    // Skipped, not granted: the lock stays free until the waiter, subscribed again (ioredis does it
    // before its 'ready', which makes every waiter attempt), asks. Read in one MULTI: while its
    // channel is still unheard, no attempt of its has come yet. (Back within the few ms since the
    // kill on a loaded machine, it was granted the lock: then it holds it already.)
    const [[, exists], [, numsub]] = (await raw.multi().exists(lockKey).call('PUBSUB', 'NUMSUB', channel).exec()) as [
      [null, number],
      [null, [string, number]],
    ];
    if (Number(numsub[1]) === 0) expect(exists).toBe(0);
    expect(await acquired).toBe(true);
    await live.unlock();
  }, 40_000);

  describe('that had not attempted since subscribing: one grant lease per crash', () => {
    it(`a live waiter gets the lock about one grant lease after the release, not ${DEAD_WAITERS}`, async () => {
      const delay = await liveWaiterDelay(redis.url, raw, listeners, { holder: holderApp, live: liveApp }, fresh(), true);
      expect(delay).toBeLessThan(WITHIN_MS);
    }, 40_000);

    it.each(singles)('%s takes a free lock whose line holds only dead waiters once the dead grantee lease ended', async (_, single) => {
      const name = fresh();
      const holder = holderApp.get(LockService).getLock(name);
      await holder.lock();
      await killedWithWaiters(redis.url, raw, listeners, name, true);
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

  /**
   * The line's scripts as a newcomer meets them: a fair waiter's first attempt joins the line before
   * its seat (its own channel) is subscribed, so nobody hears that channel yet. Attempts are made
   * here by hand, as a waiter `newcomer:1` whose channel the test subscribes (or not).
   */
  describe('a live newcomer is never judged by its channel', () => {
    it('a fair waiter whose first attempt joined the line before its seat was subscribed is granted the lock, not skipped', async () => {
      const name = fresh();
      const lockKey = `lock:{${name}}`;
      const holder = holderApp.get(LockService).getLock(name);
      await holder.lock();
      const fair = farApp.get(FairLockService).getLock(name);
      const acquired = fair.tryLock({ waitTime: 30_000 });
      await waitFor(async () => (await raw.zcard(LockKeys.lineDeadlines(lockKey))) === 1, { what: 'the fair newcomer in line' });
      const owner = (/^(\S+) /.exec((await raw.lrange(LockKeys.line(lockKey), 0, 0))[0]) as RegExpExecArray)[1];
      // Its subscription is still on its way: nobody hears its channel yet.
      expect(await listeners(LockKeys.waiterChannel(lockKey, owner))).toBe(0);
      await holder.unlock();
      expect(await raw.hexists(lockKey, owner)).toBe(1);
      expect(await acquired).toBe(true);
      await fair.unlock();
    }, 30_000);

    const acquire = LuaScript.named('reentrant-acquire');
    const attempt = (name: string, stamp: string): Promise<unknown> => {
      const lockKey = `lock:{${name}}`;
      return raw.eval(acquire.source, 5, lockKey, ...LockKeys.lineKeys(lockKey),
        30_000, 'newcomer:1', 'rq1', 60_000, 'newcomer:1 rq1 30000 f', 10_000, 'publish', 'wake', stamp);
    };

    it.each([
      ['its first attempt, made before subscribing', '100.ab', false],
      ['an attempt that says its seat is subscribed while nobody hears its channel', '100.ab s', false],
      ['an attempt heard on its channel, which then goes unheard (its process died)', '100.ab s', true],
    ])('%s', async (_, stamp, heardWhenAttempting) => {
      const name = fresh();
      const lockKey = `lock:{${name}}`;
      const holder = holderApp.get(LockService).getLock(name);
      await holder.lock();
      const listener = redis.client();
      if (heardWhenAttempting) await listener.subscribe(LockKeys.waiterChannel(lockKey, 'newcomer:1'));
      expect(await attempt(name, stamp)).toBeGreaterThan(0);
      const record = (await raw.hget(LockKeys.lineSeen(lockKey), 'newcomer:1 rq1 30000 f')) as string;
      expect(record.endsWith(' s')).toBe(heardWhenAttempting);
      listener.disconnect();
      await waitFor(async () => (await listeners(LockKeys.waiterChannel(lockKey, 'newcomer:1'))) === 0, { what: 'the channel unheard' });
      await holder.unlock();
      // Judged only when its own attempt was heard: then skipped (the lock stays free), else granted.
      expect(await raw.hexists(lockKey, 'newcomer:1')).toBe(heardWhenAttempting ? 0 : 1);
      await raw.del(lockKey, ...LockKeys.lineKeys(lockKey));
    });
  });
});

describeOnCluster('dead waiters on a 3-master cluster', () => {
  let cluster: TestRedisCluster;
  let raw: Cluster;
  let holderApp: TestingModule;
  let liveApp: TestingModule;
  let target: string;
  const listenersOf = (name: string): Listeners => async (channel) => shardSubscribers(await cluster.masterOf(`lock:{${name}}`), channel);

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    raw = cluster.cluster();
    target = `cluster:${cluster.startupNodes.map((n) => `${n.host}:${n.port}`).join(',')}`;
    holderApp = await createLockApp({ redis: cluster.cluster(), fairLockWaiterTimeout: GRANT_LEASE_MS });
    liveApp = await createLockApp({ redis: cluster.cluster(), fairLockWaiterTimeout: GRANT_LEASE_MS });
  }, 60_000);

  afterAll(async () => {
    await holderApp?.close();
    await liveApp?.close();
    await cluster?.stop();
  });

  it('whose seats were subscribed: the release hands the plain lock to the live waiter at once', async () => {
    const name = 'dead-waiters-cluster-heard';
    const delay = await liveWaiterDelay(target, raw, listenersOf(name), { holder: holderApp, live: liveApp }, name, false);
    expect(delay).toBeLessThan(GRANT_LEASE_MS);
  }, 60_000);

  it('whose seats were subscribed: tryLock({ waitTime: 0 }) takes the lock released into a line of only dead waiters', async () => {
    const name = 'dead-waiters-cluster-single';
    const holder = holderApp.get(LockService).getLock(name);
    await holder.lock();
    await killedWithWaiters(target, raw, listenersOf(name), name);
    await holder.unlock();
    const lock = liveApp.get(LockService).getLock(name);
    expect(await lock.tryLock({ waitTime: 0 })).toBe(true);
    await lock.unlock();
  }, 60_000);

  it(`unjudged: a live waiter gets the plain lock about one grant lease after the release, not ${DEAD_WAITERS}`, async () => {
    const name = 'dead-waiters-cluster';
    const delay = await liveWaiterDelay(target, raw, listenersOf(name), { holder: holderApp, live: liveApp }, name, true);
    expect(delay).toBeLessThan(WITHIN_MS);
  }, 60_000);
});
