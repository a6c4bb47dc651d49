import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService } from '../../lib';
import { RedissonNames } from '../../lib/layouts/redisson-names';
import type { RedLock } from '../../lib/locks/red-lock';
import { runLocked } from '../../lib/locks/run-locked';
import { LockEngine } from '../../lib/engine/lock-engine';
import { CommandMonitor, scriptCallWith } from '../support/command-monitor';
import { createLockApp, sleep } from '../support/lock-app';
import type { TestRedis } from '../support/redis-server';
import { startRedisServers, stopRedisServer, stopRedisServers } from '../support/redis-servers';
import { waitFor } from '../support/wait-for';

/**
 * The RedLock in layout 'redisson' (docs/redisson-interop.md#redlock): on each of its three masters
 * exactly what Java's RedissonRedLock writes through `getLock(N)`: the hash `N` with `owner -> 1` and
 * the lease as its TTL, released with `0` on `redisson_lock__channel:{N}`. The interop spec
 * (test/interop/red-lock.spec.ts) proves it against a real Java RedissonRedLock.
 */
describe('RedLock in layout redisson, 3 independent masters', () => {
  const WATCHDOG_MS = 900;
  /** A Node owner in Redisson's shape: `<client uuid>:<n>`. */
  const OWNER = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:\d+$/;
  let masters: TestRedis[];
  let raws: Redis[];
  let app: TestingModule;
  let other: TestingModule;
  let seq = 0;
  const fresh = () => `rred-${++seq}`;
  const redLock = (module: TestingModule, name: string): RedLock => module.get(LockService).getRedLock(name) as RedLock;
  const holders = async (name: string) => (await Promise.all(raws.map((r) => r.exists(name)))).reduce((a, b) => a + b, 0);

  beforeAll(async () => {
    masters = await startRedisServers(3);
    raws = masters.map((m) => m.client());
    const options = {
      redis: masters[0].url,
      layout: 'redisson' as const,
      watchdogTimeout: WATCHDOG_MS,
      redlock: { clients: masters.map((m) => m.url), masterTimeout: 1_000 },
    };
    [app, other] = await Promise.all([createLockApp(options), createLockApp(options)]);
  });
  afterAll(async () => {
    await Promise.all([app?.close(), other?.close()]);
    await stopRedisServers(masters);
  });

  it('excludes across two module instances: a lost-update counter under the lock loses nothing', async () => {
    const name = fresh();
    const counter = `${name}:counter`;
    const ROUNDS = 5;
    const contender = async (module: TestingModule) => {
      for (let i = 0; i < ROUNDS; i++) {
        const lock = redLock(module, name);
        await lock.lock();
        try {
          // GET, pause, SET: two holders at once would write the same value twice.
          const value = Number((await raws[0].get(counter)) ?? 0);
          await sleep(3);
          await raws[0].set(counter, value + 1);
        } finally {
          await lock.unlock();
        }
      }
    };
    const contenders = [app, other, app, other];
    await Promise.all(contenders.map(contender));
    expect(Number(await raws[0].get(counter))).toBe(contenders.length * ROUNDS);
    expect(await holders(name)).toBe(0);
  });

  it("holds Redisson's hash N on every master: the owner with count 1 (re-entry counted here) and the lease as TTL, no token", async () => {
    const name = fresh();
    const lock = redLock(app, name);
    await lock.lock({ leaseTime: 20_000 });
    await lock.lock({ leaseTime: 20_000 });
    expect(lock.ownerId).toMatch(OWNER);
    expect(lock.masterKey).toBe(name);
    expect(lock.getFencingToken()).toBeUndefined();
    expect(await lock.getHoldCount()).toBe(2);
    // lock() returns at a majority; the last master answers a moment later.
    await waitFor(async () => (await holders(name)) === 3, { what: `${name} on all 3 masters` });
    for (const raw of raws) {
      expect(await raw.type(name)).toBe('hash');
      expect(await raw.hgetall(name)).toEqual({ [lock.ownerId]: '1' });
      const ttl = await raw.pttl(name);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(20_000);
    }
    // Masters 1 and 2 serve nothing else: the lock is their only key (no fence key, no records).
    expect(await raws[1].keys('*')).toEqual([name]);
    expect(await raws[2].keys('*')).toEqual([name]);
    expect(await redLock(other, name).tryLock()).toBe(false);
    await lock.unlock();
    expect(await holders(name)).toBe(3);
    await lock.unlock();
    expect(await holders(name)).toBe(0);
  });

  it("refuses while another owner holds N as a Java RLock would (a foreign owner's hash on a majority)", async () => {
    const name = fresh();
    const javaOwner = '6f1c1a8e-0000-4000-8000-000000000001:57';
    await Promise.all(raws.slice(0, 2).map((raw) => raw.eval("redis.call('hincrby', KEYS[1], ARGV[1], 1); redis.call('pexpire', KEYS[1], 20000)", 1, name, javaOwner)));
    const lock = redLock(app, name);
    expect(await lock.tryLock({ waitTime: 200 })).toBe(false);
    // What it got on the free master was let go again.
    await waitFor(async () => (await raws[2].exists(name)) === 0, { what: `${name} released on master 2` });
    expect(await raws[0].hgetall(name)).toEqual({ [javaOwner]: '1' });
    await Promise.all(raws.map((raw) => raw.del(name)));
    expect(await lock.tryLock()).toBe(true);
    await lock.unlock();
  });

  it('a release deletes N on every master and publishes 0 on redisson_lock__channel:{N}, its latches deleted', async () => {
    const name = fresh();
    const channel = RedissonNames.lockChannel(name);
    expect(channel).toBe(`redisson_lock__channel:{${name}}`);
    const subscribers = raws.map((raw) => raw.duplicate());
    const messages: string[][] = raws.map(() => []);
    try {
      await Promise.all(
        subscribers.map(async (subscriber, i) => {
          subscriber.on('message', (from: string, message: string) => from === channel && messages[i].push(message));
          await subscriber.subscribe(channel);
        }),
      );
      const lock = redLock(app, name);
      await lock.lock();
      await waitFor(async () => (await holders(name)) === 3, { what: `${name} on all 3 masters` });
      const monitor = await CommandMonitor.start(raws[1]);
      try {
        await lock.unlock();
        expect(await holders(name)).toBe(0);
        await waitFor(() => messages.every((m) => m.length === 1), { what: 'the release message on every master' });
        expect(messages).toEqual([['0'], ['0'], ['0']]);
        // Redisson's latch redisson_unlock_latch:{N}:<32 hex> answered the release, then was deleted
        // as Redisson's client deletes it.
        const latch = new RegExp(`^redisson_unlock_latch:\\{${name}\\}:[0-9a-f]{32}$`);
        const latchCommand = (command: string) => (args: readonly string[]) => args[0]?.toLowerCase() === command && latch.test(args[1] ?? '');
        await waitFor(() => monitor.count(latchCommand('del')) === 1, { what: 'the unlock latch deleted on master 1' });
        expect(monitor.count(latchCommand('set'))).toBe(1);
        expect(await raws[1].keys('redisson_unlock_latch:*')).toEqual([]);
      } finally {
        monitor.stop();
      }

      // forceUnlock: no token to check (refused with one); without, it deletes everywhere and publishes 0.
      const holder = redLock(other, name);
      await holder.lock();
      await waitFor(async () => (await holders(name)) === 3, { what: `${name} on all 3 masters` });
      await expect(lock.forceUnlock({ fencingToken: 1 })).rejects.toThrow(TypeError);
      expect(await holders(name)).toBe(3);
      expect(await lock.forceUnlock()).toBe(true);
      expect(await holders(name)).toBe(0);
      await waitFor(() => messages.every((m) => m.length === 2), { what: 'the force release message on every master' });
      expect(messages).toEqual([['0', '0'], ['0', '0'], ['0', '0']]);
      await expect(holder.unlock()).rejects.toThrow(`is not held by the current owner`);
    } finally {
      await Promise.all(subscribers.map((s) => s.quit()));
    }
  });

  it('the watchdog renews it past its lease on every master (extend-only PEXPIRE), the other module refused throughout', async () => {
    const name = fresh();
    const lock = redLock(app, name);
    const monitor = await CommandMonitor.start(raws[2]);
    try {
      await lock.lock();
      const heldAt = Date.now();
      // Time passing is the behaviour under test: three leases, with renewals seen on master 2.
      await waitFor(() => Date.now() - heldAt > 3 * WATCHDOG_MS && monitor.count(scriptCallWith(name, lock.ownerId)) >= 5, {
        what: 'three leases and renewals on master 2',
      });
      expect(await redLock(other, name).tryLock()).toBe(false);
      for (const raw of raws) {
        expect(await raw.hget(name, lock.ownerId)).toBe('1');
        const ttl = await raw.pttl(name);
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(WATCHDOG_MS);
      }
      await lock.unlock();
      expect(await holders(name)).toBe(0);
    } finally {
      monitor.stop();
    }
  });

  it('minHoldTime: the last release sets the lease to what is left of it on every master (not extend-only)', async () => {
    const name = fresh();
    const lock = redLock(app, name);
    // A 20 s lease, released at once with a 2 s minimum hold: the key must then live ~2 s, not 20.
    await runLocked(app.get(LockEngine), lock, async () => undefined, { leaseTime: 20_000, minHoldTime: 2_000 });
    await waitFor(async () => (await Promise.all(raws.map((raw) => raw.pttl(name)))).every((ttl) => ttl > 0 && ttl <= 2_000), {
      what: `${name} kept for the minimum hold on every master`,
    });
    expect(await redLock(other, name).tryLock()).toBe(false);
  });

  // Last: it stops master 2 for good.
  it('with one master down, the majority still grants and excludes', async () => {
    await stopRedisServer(masters[2]);
    const name = fresh();
    const lock = redLock(app, name);
    expect(await lock.tryLock({ waitTime: 2_000 })).toBe(true);
    expect(await raws[0].hget(name, lock.ownerId)).toBe('1');
    expect(await raws[1].hget(name, lock.ownerId)).toBe('1');
    expect(await redLock(other, name).tryLock({ waitTime: 200 })).toBe(false);
    await lock.unlock();
    expect(await raws[0].exists(name)).toBe(0);
    expect(await raws[1].exists(name)).toBe(0);
    const next = redLock(other, name);
    expect(await next.tryLock({ waitTime: 2_000 })).toBe(true);
    await next.unlock();
  });
});
