import type Redis from 'ioredis';
import { RedissonNames } from '../../lib/layouts/redisson-names';
import { LuaScript } from '../../lib/redis/lua-script';
import { waitUntil } from '../support/lock-app';
import { ENGINES, type ContractEngine, type EngineHandle } from '../support/lock-contract';

/**
 * The Redisson-layout fair lock's scripts, each against the effects of Redisson's RFairLock scripts
 * (docs/redisson-interop.md#fair-lock; /work/shared/redisson-layout.md §4): on a real Redis and on the
 * testing kit, which runs the same Lua. `now` is passed in, as the client's clock is, so every
 * deadline is exact.
 */
const LEASE = 10_000;
const WAIT = 5_000;
const NOW = 1_700_000_000_000;

/** The keys of one fair lock named `n`, and its scripts bound to a client. */
function fairLock(raw: Redis, n: string) {
  const queue = RedissonNames.fairQueue(n);
  const timeouts = RedissonNames.fairTimeouts(n);
  const channel = RedissonNames.lockChannel(n);
  const run = (script: string, keys: string[], args: Array<string | number>) => LuaScript.named(script).run(raw, keys, args);
  return {
    n,
    queue,
    timeouts,
    channelOf: (owner: string) => RedissonNames.fairWaiterChannel(n, owner),
    tryAcquire: (owner: string, now = NOW, lease = LEASE, wait = WAIT) => run('redisson-fair-try-acquire', [n, queue, timeouts], [lease, owner, now, wait]),
    acquire: (owner: string, now = NOW, lease = LEASE, wait = WAIT) => run('redisson-fair-acquire', [n, queue, timeouts], [lease, owner, wait, now]),
    acquireFailed: (owner: string, wait = WAIT) => run('redisson-fair-acquire-failed', [queue, timeouts], [owner, wait]),
    unlock: (owner: string, latchId: string, guard: string | number = '', now = NOW) =>
      run('redisson-fair-unlock', [n, queue, timeouts, channel, RedissonNames.unlockLatch(n, latchId)], [owner, now, 'PUBLISH', 10_000, guard]),
    forceUnlock: (now = NOW) => run('redisson-fair-force-unlock', [n, queue, timeouts, channel], [now, 'PUBLISH']),
    /** The queue, and each owner's deadline. */
    async state(): Promise<{ queue: string[]; deadlines: Record<string, number> }> {
      const flat = (await raw.zrange(timeouts, 0, -1, 'WITHSCORES')) as string[];
      const deadlines: Record<string, number> = {};
      for (let i = 0; i < flat.length; i += 2) deadlines[flat[i]] = Number(flat[i + 1]);
      return { queue: await raw.lrange(queue, 0, -1), deadlines };
    },
    /** Queues owners with the given deadlines directly (the state a Java client leaves). */
    async seed(entries: Array<[string, number | undefined]>): Promise<void> {
      for (const [owner, deadline] of entries) {
        await raw.rpush(queue, owner);
        if (deadline !== undefined) await raw.zadd(timeouts, deadline, owner);
      }
    },
  };
}

/** Messages on `channels`, as a subscriber sees them; `settle()` proves nothing else was sent before it. */
async function listen(engine: EngineHandle, raw: Redis, channels: string[]) {
  const subscriber = engine.client();
  const seen: Array<[string, string]> = [];
  subscriber.on('message', (channel: string, message: string) => seen.push([channel, message]));
  await subscriber.subscribe(...channels);
  return {
    seen,
    /** Sends a marker on every channel and waits for all of them: whatever the scripts published came before. */
    async settle(): Promise<Array<[string, string]>> {
      for (const channel of channels) await raw.publish(channel, 'marker');
      await waitUntil(() => seen.filter(([, m]) => m === 'marker').length === channels.length);
      const published = seen.filter(([, m]) => m !== 'marker');
      seen.length = 0;
      return published;
    },
    close: () => subscriber.quit(),
  };
}

describe.each(ENGINES())('Redisson fair lock scripts ($name)', (engine: ContractEngine) => {
  let redis: EngineHandle;
  let raw: Redis;
  let names = 0;
  const fresh = () => fairLock(raw, `fair-${++names}`);
  beforeAll(async () => {
    redis = await engine.start();
    raw = redis.client();
  });
  afterAll(async () => {
    await raw?.quit().catch(() => undefined);
    await redis?.stop();
  });

  describe('try-acquire (no queue)', () => {
    it('grants a free lock: owner -> 1 with the lease, and nothing queued', async () => {
      const lock = fresh();
      expect(await lock.tryAcquire('a:1')).toEqual([1]);
      expect(await raw.hgetall(lock.n)).toEqual({ 'a:1': '1' });
      const ttl = await raw.pttl(lock.n);
      expect(ttl).toBeGreaterThan(LEASE - 1_000);
      expect(ttl).toBeLessThanOrEqual(LEASE);
      expect(await lock.state()).toEqual({ queue: [], deadlines: {} });
    });

    it('re-enters (count 2), extending the TTL but never shortening it', async () => {
      const lock = fresh();
      await lock.tryAcquire('a:1', NOW, 60_000);
      expect(await lock.tryAcquire('a:1', NOW, 1_000)).toEqual([2]);
      expect(await raw.pttl(lock.n)).toBeGreaterThan(50_000); // not cut to 1 s
      expect(await lock.tryAcquire('a:1', NOW, 120_000)).toEqual([3]);
      expect(await raw.pttl(lock.n)).toBeGreaterThan(110_000);
      expect(await raw.hget(lock.n, 'a:1')).toBe('3');
    });

    it('refuses another owner with the lock\'s TTL, and never queues it', async () => {
      const lock = fresh();
      await lock.tryAcquire('a:1');
      const reply = (await lock.tryAcquire('b:1')) as number;
      expect(reply).toBeGreaterThan(LEASE - 1_000);
      expect(reply).toBeLessThanOrEqual(LEASE);
      expect(await lock.state()).toEqual({ queue: [], deadlines: {} });
      expect(await raw.hgetall(lock.n)).toEqual({ 'a:1': '1' });
    });

    it('a free lock with someone else at the head of the queue: -1 (back off), nothing written', async () => {
      const lock = fresh();
      await lock.seed([['q:1', NOW + 60_000]]);
      expect(await lock.tryAcquire('b:1')).toBe(-1);
      expect(await raw.exists(lock.n)).toBe(0);
      expect(await lock.state()).toEqual({ queue: ['q:1'], deadlines: { 'q:1': NOW + 60_000 } });
    });

    it('the head of the queue gets it: it leaves the queue and every other deadline moves `wait` earlier', async () => {
      const lock = fresh();
      await lock.seed([['q:1', NOW + 60_000], ['q:2', NOW + 70_000], ['q:3', NOW + 80_000]]);
      expect(await lock.tryAcquire('q:1', NOW, LEASE, 7_000)).toEqual([1]);
      expect(await lock.state()).toEqual({ queue: ['q:2', 'q:3'], deadlines: { 'q:2': NOW + 63_000, 'q:3': NOW + 73_000 } });
    });

    it('purges stale heads (deadline <= now) first, and stops at a live head or one without a deadline', async () => {
      const lock = fresh();
      await lock.seed([['s:1', NOW - 1], ['s:2', NOW], ['live:1', NOW + 1], ['t:1', NOW - 5]]);
      expect(await lock.tryAcquire('b:1')).toBe(-1);
      expect(await lock.state()).toEqual({ queue: ['live:1', 't:1'], deadlines: { 'live:1': NOW + 1, 't:1': NOW - 5 } });
      // a head without a deadline stops the purge, as in Redisson
      const other = fresh();
      await other.seed([['nodeadline:1', undefined], ['s:1', NOW - 1]]);
      expect(await other.tryAcquire('b:1')).toBe(-1);
      expect((await other.state()).queue).toEqual(['nodeadline:1', 's:1']);
      // the stale heads gone, the next live waiter is served by its own attempt
      expect(await lock.tryAcquire('live:1', NOW + 2, LEASE, 1_000)).toEqual([1]);
      expect(await lock.state()).toEqual({ queue: [], deadlines: {} }); // t:1 was stale too once it headed
    });
  });

  describe('acquire (queueing)', () => {
    it('a first waiter queues with deadline = PTTL + wait + now and gets the PTTL back; a resend queues it once', async () => {
      const lock = fresh();
      await lock.acquire('a:1');
      const ttl = (await lock.acquire('b:1')) as number;
      expect(ttl).toBeGreaterThan(LEASE - 1_000);
      expect(ttl).toBeLessThanOrEqual(LEASE);
      const { queue, deadlines } = await lock.state();
      expect(queue).toEqual(['b:1']);
      // the deadline is the TTL the script read plus wait plus now (the TTL may read 1 ms lower here)
      expect(deadlines['b:1'] - (NOW + WAIT)).toBeGreaterThanOrEqual(ttl);
      expect(deadlines['b:1'] - (NOW + WAIT)).toBeLessThanOrEqual(LEASE);
      const again = (await lock.acquire('b:1', NOW + 100)) as number; // already queued: max(0, PTTL)
      expect(again).toBeGreaterThan(0);
      expect(again).toBeLessThanOrEqual(LEASE);
      expect(await lock.state()).toEqual({ queue, deadlines });
    });

    it('later waiters queue behind the last one: deadline = last deadline + wait', async () => {
      const lock = fresh();
      await lock.acquire('a:1');
      await lock.acquire('b:1');
      const b = (await lock.state()).deadlines['b:1'];
      expect(await lock.acquire('c:1', NOW + 1_000)).toBe(b - (NOW + 1_000));
      expect(await lock.acquire('d:1', NOW + 2_000, LEASE, 3_000)).toBe(b + WAIT - (NOW + 2_000));
      expect(await lock.state()).toEqual({ queue: ['b:1', 'c:1', 'd:1'], deadlines: { 'b:1': b, 'c:1': b + WAIT, 'd:1': b + WAIT + 3_000 } });
    });

    it('grants in queue order: a free lock goes to the head only, and the grant shifts the others by the grantee\'s wait', async () => {
      const lock = fresh();
      await lock.acquire('a:1');
      await lock.acquire('b:1');
      await lock.acquire('c:1');
      const before = (await lock.state()).deadlines;
      await raw.del(lock.n); // the holder's lease ran out
      expect(await lock.acquire('c:1')).toBe(-1); // queued already, lock free: max(0, PTTL) = 0 -> back off
      expect(await raw.exists(lock.n)).toBe(0);
      expect(await lock.acquire('b:1', NOW, LEASE, 2_000)).toEqual([1]);
      expect(await raw.hgetall(lock.n)).toEqual({ 'b:1': '1' });
      expect(await lock.state()).toEqual({ queue: ['c:1'], deadlines: { 'c:1': before['c:1'] - 2_000 } });
      expect(await lock.acquire('b:1')).toEqual([2]); // re-entry
    });

    it('a waiter whose queued deadline passed is purged, and the next one is served', async () => {
      const lock = fresh();
      await lock.seed([['dead:1', NOW + 100], ['b:1', NOW + 10_000]]);
      expect(await lock.acquire('b:1', NOW + 100)).toEqual([1]);
      expect(await lock.state()).toEqual({ queue: [], deadlines: {} });
    });

    it('a free lock and an empty queue: granted at once, nothing queued', async () => {
      const lock = fresh();
      expect(await lock.acquire('a:1')).toEqual([1]);
      expect(await lock.state()).toEqual({ queue: [], deadlines: {} });
      expect(await raw.pttl(lock.n)).toBeGreaterThan(LEASE - 1_000);
    });
  });

  describe('acquire-failed', () => {
    it('moves every later deadline `wait` earlier, and the owner leaves queue and deadlines', async () => {
      const lock = fresh();
      await lock.seed([['a:1', NOW + 10_000], ['b:1', NOW + 20_000], ['c:1', NOW + 30_000], ['d:1', NOW + 40_000]]);
      expect(await lock.acquireFailed('b:1', 4_000)).toBe(1);
      expect(await lock.state()).toEqual({ queue: ['a:1', 'c:1', 'd:1'], deadlines: { 'a:1': NOW + 10_000, 'c:1': NOW + 26_000, 'd:1': NOW + 36_000 } });
    });

    it('an owner not queued changes nothing', async () => {
      const lock = fresh();
      await lock.seed([['a:1', NOW + 10_000], ['b:1', NOW + 20_000]]);
      expect(await lock.acquireFailed('x:1')).toBe(0);
      expect(await lock.state()).toEqual({ queue: ['a:1', 'b:1'], deadlines: { 'a:1': NOW + 10_000, 'b:1': NOW + 20_000 } });
    });
  });

  describe('unlock', () => {
    it('the last hold: deletes the lock and publishes 0 on the queue head\'s own channel only', async () => {
      const lock = fresh();
      await lock.acquire('a:1');
      await lock.acquire('b:1');
      await lock.acquire('c:1');
      const listener = await listen(redis, raw, [lock.channelOf('b:1'), lock.channelOf('c:1'), RedissonNames.lockChannel(lock.n)]);
      try {
        expect(await lock.unlock('a:1', 'l1')).toBe(1);
        expect(await raw.exists(lock.n)).toBe(0);
        expect(await raw.get(RedissonNames.unlockLatch(lock.n, 'l1'))).toBe('1');
        expect(await listener.settle()).toEqual([[lock.channelOf('b:1'), '0']]);
        expect((await lock.state()).queue).toEqual(['b:1', 'c:1']); // the queue is the waiters' to leave
      } finally {
        await listener.close();
      }
    });

    it('a partial release: count - 1, latch 0, the TTL left as it is, nothing published', async () => {
      const lock = fresh();
      await lock.acquire('a:1', NOW, 60_000);
      await lock.acquire('a:1', NOW, 60_000);
      await lock.acquire('b:1');
      const listener = await listen(redis, raw, [lock.channelOf('b:1')]);
      try {
        expect(await lock.unlock('a:1', 'l1')).toBe(0);
        expect(await raw.hget(lock.n, 'a:1')).toBe('1');
        expect(await raw.pttl(lock.n)).toBeGreaterThan(50_000);
        expect(await raw.get(RedissonNames.unlockLatch(lock.n, 'l1'))).toBe('0');
        expect(await listener.settle()).toEqual([]);
      } finally {
        await listener.close();
      }
    });

    it('a resend replays its first answer through the latch, and is not applied twice', async () => {
      const lock = fresh();
      await lock.acquire('a:1');
      await lock.acquire('a:1');
      expect(await lock.unlock('a:1', 'l1')).toBe(0);
      expect(await lock.unlock('a:1', 'l1')).toBe(0);
      expect(await raw.hget(lock.n, 'a:1')).toBe('1');
      expect(await lock.unlock('a:1', 'l2')).toBe(1);
      expect(await lock.unlock('a:1', 'l2')).toBe(1);
      expect(await lock.unlock('a:1', 'l3')).toBe(2); // a new unlock: the lock is gone
    });

    it('not held by the owner: nil, no write', async () => {
      const lock = fresh();
      await lock.acquire('a:1');
      expect(await lock.unlock('b:1', 'l1')).toBeNull();
      expect(await raw.hgetall(lock.n)).toEqual({ 'a:1': '1' });
      expect(await raw.exists(RedissonNames.unlockLatch(lock.n, 'l1'))).toBe(0);
    });

    it('a missing lock: 2 (Redisson says 1), latch 1, and the head is woken, as Redisson does', async () => {
      const lock = fresh();
      await lock.seed([['b:1', NOW + 60_000], ['stale:1', NOW - 1]]);
      const listener = await listen(redis, raw, [lock.channelOf('b:1')]);
      try {
        expect(await lock.unlock('a:1', 'l1')).toBe(2);
        expect(await raw.get(RedissonNames.unlockLatch(lock.n, 'l1'))).toBe('1');
        expect(await listener.settle()).toEqual([[lock.channelOf('b:1'), '0']]);
      } finally {
        await listener.close();
      }
    });

    it('purges stale heads before waking: the first live waiter is the one woken', async () => {
      const lock = fresh();
      await lock.acquire('a:1');
      await lock.seed([['dead:1', NOW - 10], ['b:1', NOW + 60_000]]);
      const listener = await listen(redis, raw, [lock.channelOf('dead:1'), lock.channelOf('b:1')]);
      try {
        expect(await lock.unlock('a:1', 'l1')).toBe(1);
        expect(await listener.settle()).toEqual([[lock.channelOf('b:1'), '0']]);
        expect(await lock.state()).toEqual({ queue: ['b:1'], deadlines: { 'b:1': NOW + 60_000 } });
      } finally {
        await listener.close();
      }
    });

    it('the guarded (surplus) form brings the count down to the guard, or writes nothing', async () => {
      const lock = fresh();
      await lock.acquire('a:1');
      await lock.acquire('a:1');
      await lock.acquire('a:1');
      await lock.acquire('b:1');
      const listener = await listen(redis, raw, [lock.channelOf('b:1')]);
      try {
        expect(await lock.unlock('a:1', 'g1', 3)).toBe(-1); // not above: no write, no latch
        expect(await raw.exists(RedissonNames.unlockLatch(lock.n, 'g1'))).toBe(0);
        expect(await lock.unlock('a:1', 'g2', 1)).toBe(0); // 3 -> 1
        expect(await raw.hget(lock.n, 'a:1')).toBe('1');
        expect(await lock.unlock('a:1', 'g2', 1)).toBe(0); // its resend: the latch's answer
        expect(await lock.unlock('b:1', 'g3', 0)).toBeNull(); // b holds nothing
        expect(await listener.settle()).toEqual([]);
        expect(await lock.unlock('a:1', 'g4', 0)).toBe(1); // 1 -> 0: released, head woken
        expect(await raw.exists(lock.n)).toBe(0);
        expect(await listener.settle()).toEqual([[lock.channelOf('b:1'), '0']]);
        expect(await lock.unlock('a:1', 'g5', 0)).toBeNull(); // the guarded form on a missing lock: nothing to give back
        expect(await listener.settle()).toEqual([]);
      } finally {
        await listener.close();
      }
    });
  });

  describe('force unlock', () => {
    it('deletes whoever holds it and wakes the head; 0 when already free', async () => {
      const lock = fresh();
      await lock.acquire('a:1');
      await lock.acquire('a:1');
      await lock.acquire('b:1');
      const listener = await listen(redis, raw, [lock.channelOf('b:1')]);
      try {
        expect(await lock.forceUnlock()).toBe(1);
        expect(await raw.exists(lock.n)).toBe(0);
        expect(await listener.settle()).toEqual([[lock.channelOf('b:1'), '0']]);
        expect(await lock.forceUnlock()).toBe(0);
        expect(await listener.settle()).toEqual([]);
      } finally {
        await listener.close();
      }
    });
  });
});
