import type { TestingModule } from '@nestjs/testing';
import { LockLostError, LockService } from '../../lib';
import { releasesSettled } from '../support/lock-app';
import { ENGINES, type ContractEngine, type EngineHandle } from '../support/lock-contract';

/**
 * A hold that ended in Redis (deleted, flushed, lost in a restart) before the watchdog could tell,
 * then asked for again by the same call chain: the re-entry finds the hold ended (Redis re-enters
 * only a hold the owner has now), so the loss is not hidden (the outer body ran unprotected in
 * between: its signal aborts before the inner body starts) and the inner run asks as an owner of its
 * own, getting a new episode with a new fencing token and a live signal. Each run releases the
 * handle it took: the outer release names the ended episode and ends nothing
 * (docs/owners-and-reentry.md#the-owner-model); the inner one frees the lock.
 */
describe.each(ENGINES())('hold model: a re-acquisition does not hide an ended hold ($name)', (engine: ContractEngine) => {
  let redis: EngineHandle;
  let app: TestingModule;

  beforeAll(async () => {
    redis = await engine.start();
    // A long watchdog: no renewal round can notice the loss during the test.
    app = await redis.createApp({ redis: redis.url, watchdogTimeout: 60_000 });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('the outer signal aborts with LockLostError, the inner body holds a new episode with a live signal, the lock is released', async () => {
    const locks = app.get(LockService);
    const name = 'ended-episode';
    const lockKey = `lock:{${name}}`;
    let outerToken: number | undefined;
    let innerToken: number | undefined;
    let outerAbortedBeforeInner = true;
    let innerAborted = false;
    let outerReason: unknown;
    await locks.run(name, async ({ signal, fencingToken }) => {
      outerToken = fencingToken;
      await redis.del(lockKey); // the hold ends in Redis behind the library's back
      await locks.run(name, async (inner) => {
        outerAbortedBeforeInner = false;
        innerToken = inner.fencingToken;
        innerAborted = inner.signal.aborted;
        expect(locks.current()?.fencingToken).toBe(inner.fencingToken);
      });
      outerReason = signal.reason;
      outerAbortedBeforeInner = outerAbortedBeforeInner || !signal.aborted;
    }).catch(() => undefined);
    expect(outerAbortedBeforeInner).toBe(false);
    expect(outerReason).toBeInstanceOf(LockLostError);
    expect(innerAborted).toBe(false);
    expect(innerToken).toBeGreaterThan(outerToken as number);
    await releasesSettled(app);
    expect(await redis.exists(lockKey)).toBe(0);
  });
});
