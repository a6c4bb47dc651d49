import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { ReplyError } from 'ioredis';
import { LockService } from '../../lib';
import { LockEngine } from '../../lib/engine/lock-engine';
import { LuaScript } from '../../lib/redis/lua-script';
import { createLockApp, sleep, waitUntil } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';
import { DelayRelay } from '../support/delay-relay';
import { HoldWitness } from '../support/hold-witness';

/**
 * Review (issue 33): the surplus take-back's guard is `holdCount + pending + inFlight`, and `unlock()`
 * counts a hold off *before* its release is known to have run. A release Redis refused without
 * running it (a `-BUSY` while another client's script runs long, `-LOADING`, `-OOM`...) is resent by
 * `resendRelease` 100 ms later. A take-back sent in between (here: a re-acquisition by the same call
 * chain, whose grant answers a count above what the process accounts for) removes the count that
 * release was meant to remove; the resend then removes another one: Redis holds one count fewer
 * than the bodies inside, and the next release deletes the lock under the outer body.
 *
 * The refused release is injected on the client (the reply Redis gives to a command it did not run
 * while busy); the relay in front of the holder's connection (20 ms each way) lets the other process,
 * which talks to Redis directly, get in before the holder hears its last release's answer.
 */
describe("review: layout 'redisson' surplus take-back against a release that has not run yet", () => {
  let redis: TestRedis;
  let relay: DelayRelay;
  let slow: TestingModule;
  let other: TestingModule;
  let raw: Redis;
  const locks = (m: TestingModule) => m.get(LockService);

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    relay = await DelayRelay.start(redis.port, 20);
    slow = await createLockApp({ redis: relay.url, layout: 'redisson', watchdogTimeout: 30_000 });
    other = await createLockApp({ redis: redis.url, layout: 'redisson', watchdogTimeout: 30_000 });
  });
  afterAll(async () => {
    await slow?.close();
    await other?.close();
    await relay?.stop();
    await redis?.stop();
  });

  it('a refused inner release, a re-entry, the resend: the outer body keeps the lock', async () => {
    const name = 'review:takeback:1';
    const witness = new HoldWitness();
    const client = slow.get(LockEngine).client as unknown as Redis;
    const unlockSha = LuaScript.named('redisson-lock-unlock').sha;
    let otherEntered = false;
    let refused = false;
    const outer = locks(slow).run(name, (outerCtx) =>
      witness.inside('slow', name, outerCtx.signal, async () => {
        await locks(slow).run(name, async () => {
          // The inner release is refused once without running (as Redis answers while busy).
          const original = client.evalsha;
          client.evalsha = function (this: Redis, ...args: unknown[]) {
            if (args[0] === unlockSha && args[args.length - 1] === '') {
              refused = true;
              client.evalsha = original;
              return Promise.reject(new ReplyError('BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.'));
            }
            return (original as (...a: unknown[]) => unknown).apply(this, args);
          } as typeof client.evalsha;
        });
        // The same chain takes the lock again before the release's resend (100 ms later).
        const inner = locks(slow).getLock(name);
        await inner.lock();
        await sleep(300); // the resend has run meanwhile
        await inner.unlock().catch(() => undefined);
        // The outer body goes on; another process must not get in while it runs.
        await sleep(500);
      }),
    );
    await waitUntil(async () => (await raw.exists(name)) === 1);
    const contender = locks(other)
      .run(name, (ctx) => witness.inside('other', name, ctx.signal, async () => { otherEntered = true; }), { waitTime: 5_000 })
      .catch(() => undefined);
    await outer.catch(() => undefined);
    await contender;
    expect(refused).toBe(true);
    expect(otherEntered).toBe(true);
    expect(witness.violations()).toEqual([]);
  });
});
