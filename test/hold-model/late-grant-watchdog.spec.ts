/**
 * A watchdog-kept hold whose grant was handled late (a GC pause between the attempt's write and its
 * reply) starts with little of its lease left: the lease runs from when the attempt was sent
 * (docs/architecture.md#holds), so after a 700 ms stall a 900 ms lease has ~200 ms to go. The
 * watchdog's round came right after the stall (before the reply was handled, so without this hold)
 * and the next one is a third of `watchdogTimeout` later, after Redis let the lease end. The hold
 * must end locally at its lease's end (less the drift margin), as a hold without renewal does, not
 * at that next round: otherwise another owner gets the lock while this body's signal is live.
 * (Found by test/hold-model/randomized-handoff.spec.ts, FC_SEED=4711 FC_PATH=44.)
 */
import Redis from 'ioredis';
import { ReadWriteLockService, type LockRunContext } from '../../lib';
import { stallAfterAttempt } from '../support/attempt-stall';
import { HoldWitness } from '../support/hold-witness';
import { createLockApp, deferred, releasesSettled, sleep } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

describe('a watchdog-kept hold granted late ends at its lease, not at the next watchdog round', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('aborts the signal before Redis lets another owner in', async () => {
    const name = 'late-grant-watchdog';
    const clientA = new Redis(redis.url);
    const options = { watchdogTimeout: 900, commandTimeout: 2_000 };
    const appA = await createLockApp({ redis: clientA, ...options });
    const appB = await createLockApp({ redis: redis.url, ...options });
    const witness = new HoldWitness();
    let stalledFrom = 0;
    const entered = deferred();
    try {
      stallAfterAttempt(clientA, { nth: 1, ms: 700, keyPart: name, onStall: (from) => (stalledFrom = from) });
      const w = appA.get(ReadWriteLockService).runWrite(
        name,
        (context: LockRunContext) =>
          witness.inside('W', name, context.signal, async () => {
            entered.resolve();
            await sleep(400);
          }),
        { waitTime: 0 },
      );
      // (A grant handled after its lease ended would be given back: W then fails rather than enters.)
      await Promise.race([entered.promise, w.then(() => Promise.reject(new Error('W ended without entering')))]);
      expect(stalledFrom).toBeGreaterThan(0);
      // Redis's lease (900 ms from the attempt's arrival, before the stall began) ends by now + ~200 ms.
      let x = false;
      await appB.get(ReadWriteLockService).runWrite(
        name,
        (context: LockRunContext) =>
          witness.inside('X', name, context.signal, async () => {
            x = true;
          }),
        { waitTime: 1_000 },
      );
      await w.catch(() => undefined);
      expect(x).toBe(true);
      expect(performance.now() - stalledFrom).toBeLessThan(1_250); // X got in before W's next round (~300 ms after the stall) would have told W
      await releasesSettled(appA);
      await releasesSettled(appB);
    } finally {
      await appA.close();
      await appB.close();
      clientA.disconnect();
    }
    expect(witness.violations()).toEqual([]);
    const [wVisit] = witness.visits;
    expect(String(wVisit.abortReason)).toMatch(/lease ran out/);
  }, 20_000);
});
