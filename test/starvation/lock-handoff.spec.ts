import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockLostError, LockService } from '../../lib';
import { completion, printed, spawnFixture } from '../support/child-process';
import { deadGranteeDelay } from '../support/dead-grantee';
import { createLockApp, sleep, waitersQueued, waitUntil } from '../support/lock-app';
import { startRedis, TestRedis } from '../support/redis-server';
import { kitEngine } from '../support/lock-contract';
import { describeOnCluster, startRedisCluster } from '../support/redis-cluster';

/** Short, so a dead waiter's grant lease (the waiter timeout at most) is short too. */
const WAITER_TIMEOUT_MS = 1_000;
const HOLD_MS = 20;
/**
 * A looper's rounds a waiter may see before its turn: the one in progress, and those that end while
 * the waiter subscribes (on a loaded machine, or a cluster's shard, one or two of 20 ms).
 */
const MAX_ROUNDS_BEFORE_TURN = 4;

type Kind = 'reentrant' | 'fair';
const locksOf = (kind: Kind, moduleRef: TestingModule) => (kind === 'fair' ? moduleRef.get(FairLockService) : moduleRef.get(LockService));

/**
 * The witness of one suite: `body` holds the lock HOLD_MS and counts bodies that overlapped (must stay
 * 0); `loop` runs it on `name` until `stop.done`, counting rounds (`style` 'pair': awaited lock() and
 * unlock() instead of run()).
 */
function overlapWitness(kind: Kind) {
  let inside = 0;
  const witness = {
    overlaps: 0,
    async body(): Promise<void> {
      inside += 1;
      if (inside > 1) witness.overlaps += 1;
      await sleep(HOLD_MS);
      inside -= 1;
    },
    async loop(moduleRef: TestingModule, name: string, stop: { done: boolean }, rounds: { n: number }, style: 'run' | 'pair' = 'run'): Promise<void> {
      while (!stop.done) {
        if (style === 'run') {
          await locksOf(kind, moduleRef).run(name, witness.body, { waitTime: 10_000 });
        } else {
          const lock = locksOf(kind, moduleRef).getLock(name);
          await lock.lock();
          try {
            await witness.body();
          } finally {
            await lock.unlock();
          }
        }
        rounds.n += 1;
      }
    },
  };
  return witness;
}

/**
 * No waiter starves (docs/architecture.md#hand-off): a release hands the lock to the first waiter in
 * the Redis line, so a holder that releases and asks again at once, in another module instance or
 * process, queues behind it. Each scenario failed before the hand-off: the looping holder took every
 * release (the waiter gave up after 3 s, or two loops split 2 s as 364 rounds against 1).
 */
describe.each(['reentrant', 'fair'] as const)('no waiter starves: the %s lock', (kind) => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let other: TestingModule; // a second module instance: another process, as far as Redis can tell
  let seq = 0;
  const fresh = () => `starve-${kind}-${++seq}`;
  const locks = (moduleRef: TestingModule) => locksOf(kind, moduleRef);
  let witness = overlapWitness(kind);
  const body = () => witness.body();
  const loop: ReturnType<typeof overlapWitness>['loop'] = (...args) => witness.loop(...args);

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, fairLockWaiterTimeout: WAITER_TIMEOUT_MS });
    other = await createLockApp({ redis: redis.url, fairLockWaiterTimeout: WAITER_TIMEOUT_MS });
  });
  beforeEach(() => {
    witness = overlapWitness(kind);
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await redis?.stop();
  });

  it.each(['run', 'pair'] as const)('a holder looping (%s) cannot keep out a waiter of another instance', async (style) => {
    const name = fresh();
    const stop = { done: false };
    const rounds = { n: 0 };
    const looping = loop(app, name, stop, rounds, style);
    try {
      await waitUntil(() => rounds.n >= 3);
      const askedAt = rounds.n;
      let enteredAt = -1;
      await locks(other).run(
        name,
        async () => {
          enteredAt = rounds.n;
          await body();
        },
        { waitTime: 3_000 },
      );
      // The waiter got in after the round in progress and the rounds that ended while it subscribed
      // (it joins the line with its attempt once subscribed): a few, not the 39 of 39 before the
      // line. The looper goes on.
      expect(enteredAt - askedAt).toBeLessThanOrEqual(MAX_ROUNDS_BEFORE_TURN);
      await waitUntil(() => rounds.n >= enteredAt + 3);
    } finally {
      stop.done = true;
      await looping;
    }
    expect(witness.overlaps).toBe(0);
  });

  it('two instances looping on one lock share it', async () => {
    const name = fresh();
    const stop = { done: false };
    const mine = { n: 0 };
    const theirs = { n: 0 };
    const loops = [loop(app, name, stop, mine), loop(other, name, stop, theirs)];
    await sleep(2_000);
    stop.done = true;
    await Promise.all(loops);
    expect(Math.min(mine.n, theirs.n) / Math.max(mine.n, theirs.n)).toBeGreaterThanOrEqual(0.5);
    expect(mine.n + theirs.n).toBeGreaterThan(10);
    expect(witness.overlaps).toBe(0);
  });

  it('a process looping on the lock lets this one in after a bounded number of its rounds, losing no update', async () => {
    const name = fresh();
    const child = spawnFixture('hot-loop', [redis.url, kind, name, 'loop', '4000', String(HOLD_MS)]);
    const done = completion(child);
    await printed(child, 'looping');
    const childRounds = async () => Number(await raw.get(`rounds:${name}:child`));
    const waited: number[] = [];
    for (let i = 0; i < 5; i++) {
      const askedAt = await childRounds();
      await locks(app).run(
        name,
        async () => {
          waited.push((await childRounds()) - askedAt);
          const value = Number((await raw.get(`counter:${name}`)) ?? 0);
          await sleep(HOLD_MS);
          await raw.set(`counter:${name}`, value + 1);
        },
        { waitTime: 3_000 },
      );
    }
    const out = await done;
    const total = Number(/rounds (\d+)/.exec(out)?.[1]);
    expect(Math.max(...waited)).toBeLessThanOrEqual(MAX_ROUNDS_BEFORE_TURN);
    expect(total).toBeGreaterThan(5); // the looping process kept going
    expect(Number(await raw.get(`counter:${name}`))).toBe(total + 5); // no lost update
  }, 30_000);

  it.each([{ leaseTime: undefined }, { leaseTime: 4_000 }])(
    'a lock handed over keeps its holder\'s own lease past the short grant lease (leaseTime $leaseTime)',
    async ({ leaseTime }) => {
      const name = fresh();
      const holder = locks(app).getLock(name);
      await holder.lock();
      const third = createLockApp({ redis: redis.url });
      let aborted = false;
      const waiting = locks(other).run(
        name,
        async ({ signal }) => {
          signal.addEventListener('abort', () => (aborted = true));
          await sleep(WAITER_TIMEOUT_MS * 2.5); // well past the grant lease
          return locks(await third).getLock(name).tryLock();
        },
        { waitTime: 10_000, leaseTime },
      );
      await waitersQueued(other, 1);
      await holder.unlock();
      expect(await waiting).toBe(false); // still held by the handed-to holder at the end
      expect(aborted).toBe(false);
      await (await third).close();
    },
  );

  it('a handed lock whose confirmation cannot get through ends locally with the grant lease', async () => {
    const name = fresh();
    const holder = locks(app).getLock(name);
    await holder.lock();
    let enteredAt = 0;
    const waiting = locks(other).run(
      name,
      async ({ signal }) => {
        enteredAt = Date.now();
        await redis.pause(); // before the confirmation goes out (a third into the grant lease)
        await new Promise((resolve) => signal.addEventListener('abort', resolve));
        return { reason: signal.reason as unknown, after: Date.now() - enteredAt };
      },
      { waitTime: 10_000 },
    );
    await waitersQueued(other, 1);
    await holder.unlock();
    try {
      const { reason, after } = await waiting;
      expect(reason).toBeInstanceOf(LockLostError);
      expect(after).toBeLessThanOrEqual(WAITER_TIMEOUT_MS);
    } finally {
      await redis.resume();
    }
  });

  it('a grant made while the waiter\'s subscription is down is found once it is back (resubscribe, then check)', async () => {
    const name = fresh();
    const holder = locks(app).getLock(name);
    await holder.lock(); // watchdog lease: a waiter that missed the grant would sleep up to 30 s
    const waiter = locks(other).getLock(name);
    const acquired = waiter.tryLock({ waitTime: 20_000 });
    await waitersQueued(other, 1);
    await raw.client('KILL', 'TYPE', 'pubsub'); // every subscriber connection drops
    await holder.unlock(); // handed over while the waiter cannot hear it
    const releasedAt = Date.now();
    expect(await acquired).toBe(true);
    expect(Date.now() - releasedAt).toBeLessThan(5_000);
    expect(await waiter.getHoldCount()).toBe(1);
    await waiter.unlock();
  });

  it('a waiter handed the lock that dies before hearing of it blocks the next one for at most the grant lease', async () => {
    const name = fresh();
    const lockKey = `lock:{${name}}`;
    const holder = locks(app).getLock(name);
    await holder.lock();
    const next = locks(other).getLock(name);
    const delay = await deadGranteeDelay({
      fixtureArgs: [redis.url, kind, name, 'wait', '0', '0'],
      lineLength: () => raw.llen(`${lockKey}:line`),
      next,
      release: () => holder.unlock(),
      handedToChild: async () => {
        // Handed to the stopped process, inside the release: its owner holds the lock now.
        const owners = (await raw.hkeys(lockKey)).filter((field) => /^\S+:\d+$/.test(field)); // owner ids
        expect(owners).toHaveLength(1);
        expect(owners[0]).not.toBe((next as unknown as { ownerId: string }).ownerId);
        expect(await raw.pttl(lockKey)).toBeLessThanOrEqual(WAITER_TIMEOUT_MS);
      },
    });
    // The grant lease, plus slack for a loaded machine: not the holder's 30 s lease.
    expect(delay).toBeLessThan(WAITER_TIMEOUT_MS + 2_000);
  }, 40_000);
});

/**
 * The same promise on the testing kit (the same scripts, in process) and on a 3-master cluster
 * (sharded pub/sub: a grant reaches the waiter on its shard): a looping holder lets a waiter of
 * another instance in, and two loops share the lock.
 */
function describeHandOffBetweenInstances(title: string, start: () => Promise<{ createApp(): Promise<TestingModule>; stop(): Promise<void> }>): void {
  describe.each(['reentrant', 'fair'] as const)(`no waiter starves (${title}): the %s lock`, (kind) => {
    let server: { stop(): Promise<void> };
    let app: TestingModule;
    let other: TestingModule;
    let seq = 0;
    const fresh = () => `starve-${kind}-${++seq}`;
    const locks = (moduleRef: TestingModule) => locksOf(kind, moduleRef);
    const witness = overlapWitness(kind);
    const body = () => witness.body();
    const loop: ReturnType<typeof overlapWitness>['loop'] = (...args) => witness.loop(...args);

    beforeAll(async () => {
      const started = await start();
      server = started;
      app = await started.createApp();
      other = await started.createApp();
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      await other?.close();
      await server?.stop();
    });

    it('a looping holder lets a waiter of another instance in within a few rounds, and two loops share the lock', async () => {
      const name = fresh();
      const stop = { done: false };
      const rounds = { n: 0 };
      const theirs = { n: 0 };
      const looping = loop(app, name, stop, rounds);
      try {
        await waitUntil(() => rounds.n >= 3);
        const askedAt = rounds.n;
        let enteredAt = -1;
        await locks(other).run(name, async () => {
          enteredAt = rounds.n;
          await body();
        }, { waitTime: 3_000 });
        expect(enteredAt - askedAt).toBeLessThanOrEqual(MAX_ROUNDS_BEFORE_TURN);
        const otherLoop = loop(other, name, stop, theirs);
        const from = rounds.n;
        await sleep(1_500);
        stop.done = true;
        await otherLoop;
        const mine = rounds.n - from;
        expect(Math.min(mine, theirs.n) / Math.max(mine, theirs.n)).toBeGreaterThanOrEqual(0.5);
      } finally {
        stop.done = true;
        await looping;
      }
      expect(witness.overlaps).toBe(0);
    });
  });
}

describeHandOffBetweenInstances('testing kit', async () => {
  const kit = await kitEngine.start();
  return { createApp: () => kit.createApp({ redis: kit.url, fairLockWaiterTimeout: WAITER_TIMEOUT_MS }), stop: () => kit.stop() };
});

describeOnCluster('no waiter starves on a cluster', () => {
  describeHandOffBetweenInstances('3-master cluster', async () => {
    const cluster = await startRedisCluster(3);
    return { createApp: () => createLockApp({ redis: cluster.cluster(), fairLockWaiterTimeout: WAITER_TIMEOUT_MS }), stop: () => cluster.stop() };
  });
});
