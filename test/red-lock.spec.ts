import type { TestingModule } from '@nestjs/testing';
import { Cluster } from 'ioredis';
import { LockError, LockLostError, LockService, LockShutdownError, LockTimeoutError, LockUnavailableError } from '../lib';
import type { RedLock } from '../lib/locks/red-lock';
import { LockEngine } from '../lib/engine/lock-engine';
import { runLocked } from '../lib/locks/run-locked';
import { CommandMonitor, scriptCallWith } from './support/command-monitor';
import { createLockApp, deferred, sleep, waitUntil } from './support/lock-app';
import { describeLockContract } from './support/lock-contract';
import type { TestRedis } from './support/redis-server';
import { startRedisServers, stopRedisServer, stopRedisServers } from './support/redis-servers';
import { waitFor } from './support/wait-for';

const redLock = (app: TestingModule, name: string): RedLock => app.get(LockService).getRedLock(name) as RedLock;

// Every exclusive lock kind passes the contract; a RedLock over one master is the smallest case.
describeLockContract({
  kind: 'redlock',
  make: (app, name) => app.get(LockService).getRedLock(name),
  run: (app, name, fn, options) => runLocked(app.get(LockEngine), redLock(app, name), fn, options) as ReturnType<typeof fn>,
  redisKey: (name) => `lock:{${name}}`,
  // A generous per-master bound: the contract is about lock semantics, not a loaded CI's event loop.
  moduleOptions: (redisUrl) => ({ redlock: { clients: [redisUrl], masterTimeout: 1_000 } }),
  waitsByRetrying: true,
});

describe('RedLock on 3 independent masters', () => {
  const WATCHDOG_MS = 900;
  let masters: TestRedis[];
  let raws: ReturnType<TestRedis['client']>[];
  let app: TestingModule;
  let other: TestingModule;
  let seq = 0;
  const fresh = () => `red-${++seq}`;
  const key = (name: string) => `lock:{${name}}`;
  const holders = async (name: string) => (await Promise.all(raws.map((r) => r.exists(key(name))))).reduce((a, b) => a + b, 0);

  beforeAll(async () => {
    masters = await startRedisServers(3);
    raws = masters.map((m) => m.client());
    // masterTimeout: a frozen master costs at most this per attempt; generous so that a busy CI
    // event loop never turns a healthy master's answer into a timeout.
    const options = { redis: masters[0].url, watchdogTimeout: WATCHDOG_MS, redlock: { clients: masters.map((m) => m.url), masterTimeout: 1_000 } };
    app = await createLockApp(options);
    other = await createLockApp(options);
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await stopRedisServers(masters);
  });

  it('takes the key on every master for one owner and releases it on all of them', async () => {
    const name = fresh();
    const lock = redLock(app, name);
    await lock.lock();
    // lock() returns at a majority; the last master answers a moment later.
    await waitUntil(async () => (await Promise.all(raws.map((r) => r.hget(key(name), lock.ownerId)))).every((v) => v === '1'));
    expect(await lock.isLocked()).toBe(true);
    expect(await lock.isHeldByCurrentOwner()).toBe(true);
    expect(await redLock(other, name).isHeldByCurrentOwner()).toBe(false);
    await lock.unlock();
    expect(await holders(name)).toBe(0);
    expect(await lock.isLocked()).toBe(false);
  });

  it('re-enters in the owning process: every master keeps a count of 1, the last unlock releases', async () => {
    const name = fresh();
    const lock = redLock(app, name);
    await lock.lock();
    await lock.lock();
    expect(await lock.getHoldCount()).toBe(2);
    await waitUntil(async () => (await Promise.all(raws.map((r) => r.hget(key(name), lock.ownerId)))).every((v) => v === '1'));
    await lock.unlock();
    expect(await holders(name)).toBe(3);
    await lock.unlock();
    expect(await holders(name)).toBe(0);
    await expect(lock.unlock()).rejects.toThrow(`Lock "${name}" is not held by the current owner`);
  });

  it('a majority is enough: with one master frozen the lock is granted, and it still excludes', async () => {
    const name = fresh();
    masters[2].pause();
    try {
      const lock = redLock(app, name);
      expect(await lock.tryLock()).toBe(true);
      expect(await raws[0].exists(key(name))).toBe(1);
      expect(await raws[1].exists(key(name))).toBe(1);
      expect(await redLock(other, name).tryLock({ waitTime: 200 })).toBe(false);
      await lock.unlock();
      const next = redLock(other, name);
      expect(await next.tryLock()).toBe(true);
      await next.unlock();
    } finally {
      masters[2].resume();
    }
    // The frozen master ran its queued commands in order (each acquire before its release).
    await waitUntil(async () => (await holders(name)) === 0, 5_000);
  });

  it('an acquisition slower than the lease (minus drift) does not count, and is released everywhere', async () => {
    const name = fresh();
    // A long per-master bound isolates the validity rule from the per-master timeout.
    const patient = await createLockApp({
      redis: masters[0].url,
      watchdogTimeout: WATCHDOG_MS,
      redlock: { clients: masters.map((m) => m.url), masterTimeout: 5_000 },
    });
    try {
      masters[1].pause();
      masters[2].pause();
      const resume = sleep(300).then(() => {
        masters[1].resume();
        masters[2].resume();
      });
      // The majority answers after ~300 ms: too late for a 100 ms lease...
      expect(await redLock(patient, name).tryLock({ leaseTime: 100 })).toBe(false);
      await resume;
      await waitUntil(async () => (await holders(name)) === 0, 5_000);
      // ...but in time for a 10 s one.
      masters[1].pause();
      masters[2].pause();
      const resumeAgain = sleep(300).then(() => {
        masters[1].resume();
        masters[2].resume();
      });
      const lock = redLock(patient, name);
      expect(await lock.tryLock({ leaseTime: 10_000 })).toBe(true);
      await resumeAgain;
      // The master that did not count towards the majority answers a moment later.
      await waitFor(async () => (await holders(name)) === 3, { what: `${name} on all 3 masters` });
      await lock.unlock();
      expect(await holders(name)).toBe(0);
    } finally {
      masters[1].resume();
      masters[2].resume();
      await patient.close();
    }
  });

  it('never grants one name to two owners: contenders in two module instances, one master frozen midway', async () => {
    const name = fresh();
    let inside = 0;
    let maxInside = 0;
    let entries = 0;
    const contender = async (owner: TestingModule) => {
      for (let i = 0; i < 6; i++) {
        const lock = redLock(owner, name);
        await lock.lock();
        maxInside = Math.max(maxInside, ++inside);
        entries++;
        await sleep(3);
        inside--;
        await lock.unlock();
      }
    };
    const freeze = (async () => {
      await waitUntil(() => entries >= 10, 20_000);
      masters[0].pause();
      await waitUntil(() => entries >= 25, 20_000);
      masters[0].resume();
    })();
    try {
      await Promise.all([app, app, other, other, app, other].map(contender));
      await freeze;
    } finally {
      masters[0].resume();
    }
    expect(entries).toBe(36);
    expect(maxInside).toBe(1);
  });

  it('the watchdog keeps it past its lease while a majority holds it, and signals the loss of the majority', async () => {
    const name = fresh();
    const gate = deferred();
    let seen: AbortSignal | undefined;
    const lock = redLock(app, name);
    const monitor = await CommandMonitor.start(raws[1]);
    const renewals = (from: number) => monitor.count(scriptCallWith(key(name), lock.ownerId), { from });
    try {
      const running = runLocked(app.get(LockEngine), lock, async ({ signal }) => {
        seen = signal;
        await gate.promise;
        return 'finished anyway';
      }, { waitTime: 1_000 });
      await waitFor(() => seen !== undefined, { what: 'the protected code to start' });
      // The behaviour under test is time passing: two leases.
      await sleep(WATCHDOG_MS * 2);
      expect(await holders(name)).toBe(3);
      // One master losing it leaves a majority: still held, through a whole renewal round that
      // started after the loss. Rounds never overlap, so by the third renewal master 1 runs after
      // the loss (the first may belong to a round under way), the second round's answers are in.
      await raws[0].del(key(name));
      const lost = await monitor.mark(raws[1]);
      await waitFor(() => renewals(lost) >= 3, { what: '3 renewals on master 1 after master 0 lost the lock' });
      expect(seen!.aborted).toBe(false);
      expect(await redLock(other, name).tryLock()).toBe(false);
      // Two of three: the majority is gone.
      await raws[1].del(key(name));
      await waitFor(() => seen!.aborted, { what: 'the signal to abort once the majority is gone', timeoutMs: WATCHDOG_MS * 5 });
      expect(seen!.reason).toBeInstanceOf(LockLostError);
      // The minority's leftover is released too, so the name is free at once.
      await waitFor(async () => (await holders(name)) === 0, { what: `${name} released on every master`, timeoutMs: 5_000 });
      gate.resolve();
      await expect(running).resolves.toBe('finished anyway');
    } finally {
      gate.resolve();
      monitor.stop();
    }
  });

  it('a waiter gets the lock soon after the release (retry with jitter), not at lease expiry', async () => {
    const name = fresh();
    const holder = redLock(app, name);
    await holder.lock({ leaseTime: 10_000 });
    const waiter = redLock(other, name);
    const monitor = await CommandMonitor.start(raws[0]);
    const acquired = waiter.tryLock({ waitTime: 8_000 });
    try {
      // Its second attempt: the waiter saw the lock taken and is retrying.
      await waitFor(() => monitor.count(scriptCallWith(key(name), waiter.ownerId)) >= 2, { what: 'the waiter to retry' });
    } finally {
      monitor.stop();
    }
    const releasedAt = Date.now();
    await holder.unlock();
    expect(await acquired).toBe(true);
    expect(Date.now() - releasedAt).toBeLessThan(2_000);
    await waiter.unlock();
  });

  it('joins a multi-lock with other kinds: all or nothing', async () => {
    const name = fresh();
    const plain = fresh();
    const blocker = app.get(LockService).getLock(plain);
    await blocker.lock();
    const multi = other.get(LockService).getMultiLock(other.get(LockService).getRedLock(name), other.get(LockService).getLock(plain));
    expect(await multi.tryLock({ waitTime: 100 })).toBe(false);
    expect(await holders(name)).toBe(0);
    await blocker.unlock();
    expect(await multi.tryLock()).toBe(true);
    expect(await holders(name)).toBe(3);
    await multi.unlock();
    expect(await holders(name)).toBe(0);
  });

  it('shutdown cancels RedLock waits and releases what the instance holds on every master', async () => {
    const name = fresh();
    const closing = await createLockApp({ redis: masters[0].url, redlock: { clients: masters.map((m) => m.url) } });
    const held = redLock(closing, fresh());
    await held.lock();
    const blocker = redLock(app, name);
    await blocker.lock();
    const waiter = redLock(closing, name);
    const monitor = await CommandMonitor.start(raws[0]);
    const waiting = waiter.lock().catch((error: unknown) => error);
    try {
      await waitFor(() => monitor.count(scriptCallWith(key(name), waiter.ownerId)) >= 2, { what: 'the waiter to retry' });
    } finally {
      monitor.stop();
    }
    await closing.close();
    expect(await waiting).toBeInstanceOf(LockShutdownError);
    expect(await holders(held.name)).toBe(0);
    await blocker.unlock();
  });

  // Last: stops masters for good.
  it('works with one master stopped, and fails cleanly (LockUnavailableError, nothing left held) with two down', async () => {
    const name = fresh();
    await stopRedisServer(masters[2]);
    const lock = redLock(app, name);
    expect(await lock.tryLock()).toBe(true);
    expect(await redLock(other, name).tryLock({ waitTime: 100 })).toBe(false);
    await lock.unlock();

    masters[1].pause();
    try {
      const started = Date.now();
      // Too few masters answer to tell: Redis is unavailable, which is not contention.
      await expect(redLock(other, name).tryLock({ waitTime: 300 })).rejects.toBeInstanceOf(LockUnavailableError);
      // Each attempt waits at most masterTimeout (1 s here) for the frozen master: no stall.
      expect(Date.now() - started).toBeLessThan(8_000);
      expect(await raws[0].exists(key(name))).toBe(0); // the lone "yes" was released
      const error = await runLocked(other.get(LockEngine), redLock(other, name), async () => 'ran', { waitTime: 200 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockUnavailableError);
    } finally {
      masters[1].resume();
    }
  });
});

describe('RedLock configuration', () => {
  it('getRedLock without redlock.clients fails with an error naming the option', async () => {
    const app = await createLockApp({ redis: 'redis://127.0.0.1:1', redlock: undefined });
    try {
      expect(() => app.get(LockService).getRedLock('x')).toThrow(LockError);
      expect(() => app.get(LockService).getRedLock('x')).toThrow(/redlock: \{ clients/);
    } finally {
      await app.close();
    }
  });

  it.each([
    ['an empty list', { clients: [] }, /option "redlock" must be/],
    ['a master listed twice', { clients: ['redis://127.0.0.1:1', 'redis://127.0.0.1:1'] }, /"redlock.clients\[1\]".*repeats redlock.clients\[0\]/],
    ['a cluster', { clients: [new Cluster([], { lazyConnect: true })] }, /"redlock.clients\[0\]" must be a standalone Redis master/],
    ['a bad masterTimeout', { clients: ['redis://127.0.0.1:1'], masterTimeout: -1 }, /"redlock.masterTimeout"/],
    ['an unknown key', { clients: ['redis://127.0.0.1:1'], quorum: 2 }, /"redlock.quorum" is not a known option/],
  ])('rejects %s at bootstrap', async (_what, redlock, message) => {
    await expect(createLockApp({ redis: 'redis://127.0.0.1:1', redlock: redlock as never })).rejects.toThrow(message);
  });
});
