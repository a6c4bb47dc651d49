import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { SemaphoreService } from '../../lib';
import { printed, spawnFixture } from '../support/child-process';
import { createLockApp, sleep, waitersQueued, waitUntil } from '../support/lock-app';
import { startRedis, TestRedis } from '../support/redis-server';
import { kitEngine } from '../support/lock-contract';
import { describeOnCluster, startRedisCluster } from '../support/redis-cluster';

/** The channel of semaphore `name` with the default prefix: grants are published there. */
const channelOf = (name: string) => `lock:sem:{${name}}:channel`;

/** A waiter's grant lease is at most this (the waiter timeout): see semaphore-grant-line.lua. */
const WAITER_TIMEOUT_MS = 1_000;

describe('semaphore hand-off: a release grants the permits to the waiters in line (no barging)', () => {
  let redis: TestRedis;
  let a: TestingModule;
  let b: TestingModule;
  let listener: Redis;
  const messages: string[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    a = await createLockApp({ redis: redis.url, fairLockWaiterTimeout: WAITER_TIMEOUT_MS });
    b = await createLockApp({ redis: redis.url, fairLockWaiterTimeout: WAITER_TIMEOUT_MS });
    listener = redis.client();
    await listener.psubscribe('lock:sem:*:channel*');
    listener.on('pmessage', (_pattern: string, _channel: string, message: string) => messages.push(message));
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    listener?.disconnect();
    await redis?.stop();
  });

  /** Runs `run(name, 20 ms body, {permits: 1})` in a loop until `stop()`; counts its rounds. */
  function looper(service: SemaphoreService, name: string) {
    const state = { rounds: 0, stopped: false };
    const done = (async () => {
      while (!state.stopped) {
        await service.run(name, () => sleep(20), { permits: 1, waitTime: 30_000 });
        state.rounds += 1;
      }
    })();
    return { state, stop: () => ((state.stopped = true), done) };
  }

  it('a holder looping run() in one instance cannot starve a waiter in another: it gets in within a few rounds', async () => {
    const name = 'handoff-loop';
    const loop = looper(a.get(SemaphoreService), name);
    let waited: number;
    let roundsAfter: number;
    let token = 0;
    try {
      await waitUntil(() => loop.state.rounds >= 5);
      const roundsAsked = loop.state.rounds;
      let roundsEntered = -1;
      await b.get(SemaphoreService).run(
        name,
        (context) => {
          roundsEntered = loop.state.rounds;
          token = context.fencingToken as number;
        },
        { permits: 1, waitTime: 10_000 },
      );
      waited = roundsEntered - roundsAsked;
      // The looper goes on once the waiter is out.
      const afterWaiter = loop.state.rounds;
      await waitUntil(() => loop.state.rounds >= afterWaiter + 3, 5_000);
      roundsAfter = loop.state.rounds - afterWaiter;
    } finally {
      await loop.stop();
    }
    expect(waited).toBeLessThanOrEqual(3);
    expect(roundsAfter).toBeGreaterThanOrEqual(3);
    // The waiter got the permit handed over by the looper's release (one trip), not by barging in.
    await waitUntil(() => messages.some((m) => m.startsWith('granted:') && m.split(' ').includes(String(token))), 2_000);
  }, 30_000);

  it('two instances looping on one permit for 2 s share it (min/max rounds >= 0.5)', async () => {
    const name = 'handoff-share';
    const loops = [looper(a.get(SemaphoreService), name), looper(b.get(SemaphoreService), name)];
    await sleep(2_000);
    await Promise.all(loops.map((loop) => loop.stop()));
    const rounds = loops.map((loop) => loop.state.rounds);
    process.stdout.write(`semaphore hand-off share: rounds ${rounds.join(' / ')}\n`);
    expect(Math.min(...rounds)).toBeGreaterThan(0);
    expect(Math.min(...rounds) / Math.max(...rounds)).toBeGreaterThanOrEqual(0.5);
  }, 30_000);

  it('a waiter handed permits on the short grant lease confirms its full lease (a fixed leaseTime too) and keeps them past the grant lease', async () => {
    const name = 'handoff-confirm';
    const holder = await a.get(SemaphoreService).getSemaphore(name, { permits: 1 }).acquire();
    const waiting = b.get(SemaphoreService).getSemaphore(name, { permits: 1 }).acquire({ waitTime: 10_000, leaseTime: 20_000 });
    await waitUntil(async () => (await a.get(SemaphoreService).inspect(name)).waiters.length === 1, 10_000);
    // Asleep on its subscription: it hears of the grant (rather than finding it by its next attempt).
    await waitersQueued(b, 1);
    await holder.release();
    const permit = await waiting;
    // Handed over (the grant named it), then confirmed in the background to its 20 s lease.
    await waitUntil(() => messages.some((m) => m.startsWith('granted:') && m.split(' ').includes(String(permit.fencingToken))), 2_000);
    await waitUntil(async () => ((await a.get(SemaphoreService).inspect(name)).holders[0]?.ttl ?? 0) > WAITER_TIMEOUT_MS * 2, 2_000);
    await sleep(WAITER_TIMEOUT_MS + 300);
    expect(permit.signal.aborted).toBe(false);
    await permit.release();
  }, 30_000);

  it('a granted waiter that died delays the next waiter by no more than the grant lease', async () => {
    const name = 'handoff-dead';
    const service = a.get(SemaphoreService);
    const holder = await service.getSemaphore(name, { permits: 1 }).acquire();
    const child = spawnFixture('semaphore-waiter', [redis.url, name, '1', String(WAITER_TIMEOUT_MS)]);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await printed(child, 'asking');
      await waitUntil(async () => (await service.inspect(name)).waiters.length === 1, 10_000);
      const deadId = (await service.inspect(name)).waiters[0].ownerId;
      // The next waiter, in another instance, stands behind the child in line.
      const next = b.get(SemaphoreService).getSemaphore(name, { permits: 1 }).acquire({ waitTime: 15_000 });
      await waitUntil(async () => (await service.inspect(name)).waiters.length === 2, 10_000);
      expect((await service.inspect(name)).waiters[0].ownerId).toBe(deadId);
      // The child stops before the release (it cannot hear of the grant), then dies.
      child.kill('SIGSTOP');
      const releasedAt = Date.now();
      await holder.release();
      const info = await service.inspect(name);
      expect(info.holders.map((h) => h.ownerId)).toEqual([deadId]);
      expect(info.holders[0].ttl).toBeLessThanOrEqual(WAITER_TIMEOUT_MS);
      child.kill('SIGKILL');
      await exited;
      const permit = await next;
      const waitedMs = Date.now() - releasedAt;
      process.stdout.write(`semaphore hand-off to a dead waiter: the next got in after ${waitedMs} ms\n`);
      // Not while the dead waiter's grant lease still ran (server clock: a little tolerance), and
      // not much later than its end.
      expect(waitedMs).toBeGreaterThanOrEqual(WAITER_TIMEOUT_MS - 50);
      expect(waitedMs).toBeLessThan(WAITER_TIMEOUT_MS + 2_000);
      await permit.release();
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  }, 30_000);
});

/**
 * The same promise on the testing kit (the same scripts, in process) and on a 3-master cluster
 * (grants by sharded pub/sub): a looping holder lets a waiter of another instance in within a few
 * rounds, and two loops share one permit.
 */
function describeSemaphoreHandOff(title: string, start: () => Promise<{ createApp(): Promise<TestingModule>; stop(): Promise<void> }>): void {
  describe(`semaphore hand-off (${title})`, () => {
    let server: { stop(): Promise<void> };
    let a: TestingModule;
    let b: TestingModule;
    beforeAll(async () => {
      const started = await start();
      server = started;
      a = await started.createApp();
      b = await started.createApp();
    }, 60_000);
    afterAll(async () => {
      await a?.close();
      await b?.close();
      await server?.stop();
    });

    it('a looping holder lets a waiter of another instance in within a few rounds, and two loops share the permit', async () => {
      const name = `handoff-${title.replace(/\W/g, '-')}`;
      let inside = 0;
      let overlaps = 0;
      const body = async (): Promise<void> => {
        inside += 1;
        if (inside > 1) overlaps += 1;
        await sleep(20);
        inside -= 1;
      };
      const stop = { done: false };
      const loop = async (moduleRef: TestingModule, rounds: { n: number }) => {
        while (!stop.done) {
          await moduleRef.get(SemaphoreService).run(name, body, { permits: 1, waitTime: 10_000 });
          rounds.n += 1;
        }
      };
      const mine = { n: 0 };
      const theirs = { n: 0 };
      const looping = loop(a, mine);
      try {
        await waitUntil(() => mine.n >= 3);
        const askedAt = mine.n;
        let enteredAt = -1;
        await b.get(SemaphoreService).run(name, async () => {
          enteredAt = mine.n;
          await body();
        }, { permits: 1, waitTime: 3_000 });
        expect(enteredAt - askedAt).toBeLessThanOrEqual(4);
        const otherLoop = loop(b, theirs);
        const from = mine.n;
        await sleep(1_500);
        stop.done = true;
        await otherLoop;
        const ours = mine.n - from;
        expect(Math.min(ours, theirs.n) / Math.max(ours, theirs.n)).toBeGreaterThanOrEqual(0.5);
      } finally {
        stop.done = true;
        await looping;
      }
      expect(overlaps).toBe(0);
    });
  });
}

describeSemaphoreHandOff('testing kit', async () => {
  const kit = await kitEngine.start();
  return { createApp: () => kit.createApp({ redis: kit.url, fairLockWaiterTimeout: WAITER_TIMEOUT_MS }), stop: () => kit.stop() };
});

describeOnCluster('semaphore hand-off on a cluster', () => {
  describeSemaphoreHandOff('3-master cluster', async () => {
    const cluster = await startRedisCluster(3);
    return { createApp: () => createLockApp({ redis: cluster.cluster(), fairLockWaiterTimeout: WAITER_TIMEOUT_MS }), stop: () => cluster.stop() };
  });
});
