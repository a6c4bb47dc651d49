import type { TestingModule } from '@nestjs/testing';
import { LockDeadlockError, LockService } from '../../lib';
import { createLockApp, sleep } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * Review (docs/deadlocks.md, promise (a): never a false positive). A wait-for record is written
 * beside a hold of the waiting call chain while its body runs. When the body ends the wait stops
 * counting (docs: "Once the body ended, what it left running is a new owner with no chain"), and
 * the in-process graph follows that (`stillHeld` checks `frame.ended`), but the record in Redis is
 * neither refreshed nor deleted: `check()` returns false ("nothing more to check") and leaves it
 * for its deadline (3 x deadlockCheckAfter, at least 3 s). A hold that outlives the body in Redis
 * (minHoldTime: `keepHeldFor` keeps it until it expires by itself) is then read by another
 * process's step as "this owner's chain waits for b": a cycle that does not exist.
 */
describe('review: a wait-for record outlives the body whose chain it described', () => {
  const CHECK_AFTER_MS = 200;
  let redis: TestRedis;
  let first: TestingModule;
  let second: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    first = await createLockApp({ redis: redis.url, deadlockCheckAfter: CHECK_AFTER_MS });
    second = await createLockApp({ redis: redis.url, deadlockCheckAfter: CHECK_AFTER_MS });
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
    await redis?.stop();
  });

  it('a hold kept by minHoldTime after its body ended, whose body left a wait running, is not a cycle', async () => {
    const mine = first.get(LockService);
    const theirs = second.get(LockService);
    let qHoldsB = false;
    let releaseQ!: () => void;
    const qMayEnd = new Promise<void>((r) => (releaseQ = r));
    let qOutcome: unknown;

    // Q (the other module instance, another process for all it knows): holds b for a while, and
    // inside its body waits for a. It will get a once a's minHoldTime runs out (about 2.5 s).
    const q = theirs.run('stale-b', async () => {
      qHoldsB = true;
      await qMayEnd;
      return theirs.run('stale-a', async () => 'q got a', { waitTime: 8_000 });
    }, { waitTime: 8_000 });
    q.then((v) => (qOutcome = v), (e) => (qOutcome = e));
    while (!qHoldsB) await sleep(5);

    // The body holding a starts background work that waits for b (not awaited) and ends after the
    // record was written; a stays held (minHoldTime) and expires by itself at ~2.5 s.
    let background: Promise<unknown> | undefined;
    await mine.run('stale-a', async () => {
      background = mine.run('stale-b', async () => 'background got b', { waitTime: 10_000 }).catch((e) => e);
      await sleep(CHECK_AFTER_MS * 2);
    }, { minHoldTime: 2_500, waitTime: 1_000 });

    // Now Q waits for a. a's holder runs no body and waits for nothing; its hold ends by itself.
    releaseQ();
    const startedAt = Date.now();
    await q.catch(() => undefined);
    const waited = Date.now() - startedAt;
    // Expected: Q gets a when the minHoldTime ends, then the background work gets b.
    if (qOutcome instanceof LockDeadlockError) console.log('false positive after', waited, 'ms:', qOutcome.message);
    expect(qOutcome).toBe('q got a');
    expect(await background).toBe('background got b');
  }, 20_000);
});
