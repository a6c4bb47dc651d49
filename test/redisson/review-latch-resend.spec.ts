import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService } from '../../lib';
import { createLockApp, sleep, waitUntil } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';
import { DelayRelay } from '../support/delay-relay';
import { HoldWitness } from '../support/hold-witness';

/**
 * Review (issue 33): a release whose answer comes after `commandTimeout` is resent by
 * `BaseLock.resendRelease` 100 ms after the timeout, with the same latch id. But the first send's
 * own answer, when it does arrive, runs `releaseOne`'s `.then`, which DELs the latch. When that
 * answer arrives between the timeout and the resend, the DEL reaches Redis before the resend: the
 * resend finds no latch and runs the unlock a second time (HINCRBY -1 again). A re-entered owner's
 * outer hold is deleted in Redis while its body runs, and another process gets in before the outer
 * body's signal aborts.
 */
describe("review: layout 'redisson' unlock latch deleted before the release's resend", () => {
  let redis: TestRedis;
  let relay: DelayRelay;
  let slow: TestingModule;
  let other: TestingModule;
  let raw: Redis;
  const locks = (m: TestingModule) => m.get(LockService);

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    relay = await DelayRelay.start(redis.port, 0);
    // commandTimeout 200: a release answered after 240 ms (120 ms each way) has timed out at 200, and
    // its resend goes at 300, after the late answer's DEL of the latch.
    slow = await createLockApp({ redis: relay.url, layout: 'redisson', commandTimeout: 200, watchdogTimeout: 30_000 });
    other = await createLockApp({ redis: redis.url, layout: 'redisson', watchdogTimeout: 30_000 });
  });
  afterAll(async () => {
    await slow?.close();
    await other?.close();
    await relay?.stop();
    await redis?.stop();
  });

  it('the inner release of a re-entry, answered late, is applied twice: the outer hold goes while its body runs', async () => {
    const name = 'review:latch:1';
    const witness = new HoldWitness();
    let otherEntered = false;
    const outer = locks(slow).run(name, (outerCtx) =>
      witness.inside('slow', name, outerCtx.signal, async () => {
        await locks(slow).run(name, async () => {
          // From now on every chunk takes 120 ms each way: the inner release is answered after 240 ms.
          await relay.setDelay(120);
        });
        await sleep(450); // the late answer (240 ms), the resend (300 ms) and its run in Redis (~420 ms)
        await relay.setDelay(0);
        // Give the other process time to get in while this body still runs.
        await sleep(1_000);
      }),
    );
    // Another process waits for the lock meanwhile; it must not get in before the outer body is out
    // (or its signal aborted).
    await waitUntil(async () => (await raw.exists(name)) === 1);
    const contender = locks(other)
      .run(name, (ctx) => witness.inside('other', name, ctx.signal, async () => { otherEntered = true; }), { waitTime: 5_000 })
      .catch(() => undefined);
    await outer.catch(() => undefined);
    await contender;
    expect(otherEntered).toBe(true);
    expect(witness.violations()).toEqual([]);
  });
});
