import type { TestingModule } from '@nestjs/testing';
import { LockDeadlockError, LockService, ReadWriteLockService } from '../../lib';
import { createLockApp, sleep } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * Review (docs/deadlocks.md, promises (b) and (e)): "Only the youngest refuses itself; the others
 * go on (its own check refuses it)". The older member's walk finds the cycle and defers; the
 * youngest's walk is a depth-first search over a shared budget of 32 steps, so a holder with many
 * unrelated records popped first (LIFO: the last blocker's records first) uses the budget up before
 * the cycle's edge is tried. Nobody is refused: a two-party cycle hangs until waitTime.
 *
 * Parties (three module instances on one Redis; no party's cycle is visible in-process):
 * - X (instance 1): holds a read of `a`, waits for `b`.
 * - R (instance 3, watchdogTimeout 120 s so its read lease sorts after X's): holds a read of `a`,
 *   waits for 35 locks held with lock() elsewhere (chain ends: no cycle there).
 * - Y (instance 2): holds `b`, waits to write `a` (needs X's and R's reads released). Youngest.
 * X -> Y -> X is a cycle.
 */
describe('review: the youngest wait of a cross-process cycle cannot see it, the older one defers', () => {
  const CHECK_AFTER_MS = 300;
  const SIDE_WAITS = Number(process.env.SIDE_WAITS ?? 35);
  let redis: TestRedis;
  let one: TestingModule;
  let two: TestingModule;
  let three: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    one = await createLockApp({ redis: redis.url, deadlockCheckAfter: CHECK_AFTER_MS });
    two = await createLockApp({ redis: redis.url, deadlockCheckAfter: CHECK_AFTER_MS });
    three = await createLockApp({ redis: redis.url, deadlockCheckAfter: CHECK_AFTER_MS, watchdogTimeout: 120_000 });
  });
  afterAll(async () => {
    await one?.close();
    await two?.close();
    await three?.close();
    await redis?.stop();
  });

  it('a two-party cycle is refused within 1.5 x deadlockCheckAfter even when a holder has many other waits', async () => {
    const locks1 = one.get(LockService);
    const rw1 = one.get(ReadWriteLockService);
    const locks2 = two.get(LockService);
    const rw2 = two.get(ReadWriteLockService);
    const locks3 = three.get(LockService);
    const rw3 = three.get(ReadWriteLockService);

    // Chain ends: held outside any run, so they carry no records.
    const side = Array.from({ length: SIDE_WAITS }, (_, i) => `budget-d${i}`);
    const sideLocks = side.map((n) => locks1.getLock(n));
    for (const l of sideLocks) await l.lock();

    const WAIT = 6_000;
    let yHoldsB = false;
    let xReads = false;
    let rReads = false;
    let goX!: () => void;
    let goY!: () => void;
    const xMay = new Promise<void>((r) => (goX = r));
    const yMay = new Promise<void>((r) => (goY = r));

    const y = locks2.run('budget-b', async () => {
      yHoldsB = true;
      await yMay;
      return rw2.runWrite('budget-a', async () => 'y', { waitTime: WAIT });
    }, { waitTime: WAIT });
    while (!yHoldsB) await sleep(5);

    const r = rw3.runRead('budget-a', async () => {
      rReads = true;
      await Promise.allSettled(side.map((n) => locks3.run(n, async () => 'side', { waitTime: WAIT })));
      return 'r';
    }, { waitTime: WAIT });
    const x = rw1.runRead('budget-a', async () => {
      xReads = true;
      await xMay;
      return locks1.run('budget-b', async () => 'x', { waitTime: WAIT });
    }, { waitTime: WAIT });
    while (!xReads || !rReads) await sleep(5);
    goX(); // X waits for b first
    await sleep(100);
    goY(); // then Y waits to write a: the youngest wait, it closes the cycle

    const startedAt = Date.now();
    const outcomes = await Promise.allSettled([x, y]);
    const elapsed = Date.now() - startedAt;
    const errors = outcomes.map((o) => (o.status === 'rejected' ? o.reason : o.value));
    console.log('after', elapsed, 'ms:', errors.map((e) => (e instanceof Error ? `${e.constructor.name}: ${e.message.slice(0, 80)}` : e)));
    for (const l of sideLocks) await l.unlock();
    await r.catch(() => undefined);

    // Exactly one deadlock refusal (Y's), well within the bound; X finishes.
    expect(errors.filter((e) => e instanceof LockDeadlockError)).toHaveLength(1);
    expect(elapsed).toBeLessThan(1.5 * CHECK_AFTER_MS + 1_500);
  }, 30_000);
});
