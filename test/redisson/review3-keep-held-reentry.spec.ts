import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService } from '../../lib';
import { createLockApp, sleep, waitUntil } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';
import { DelayRelay } from '../support/delay-relay';
import { HoldWitness } from '../support/hold-witness';

/**
 * Review 3 (issue 33): `minHoldTime`'s release (`keepHeldFor`) forgets the hold locally, then sends
 * the renewal script in exact form (`PEXPIRE ms`). A re-entry of the same owner sent *before* it
 * (a detached call of the same chain, its attempt in flight while the body returns) runs first in
 * Redis: HINCBY to 2, TTL kept at its lease. Then the exact PEXPIRE shortens the key to `ms`. The
 * re-entry's answer (count 2, this process accounts for 1) takes the surplus back to 1 and records
 * a fresh hold with its own lease: Redis's key dies at `ms`, long before the hold's local lease, and
 * with an explicit leaseTime no watchdog renews it. Another process gets in under the live body.
 */
describe.each([
  ['redisson', (name: string) => name],
  ['native', (name: string) => `lock:{${name}}`],
] as const)("review3: layout '%s': minHoldTime release against a concurrent re-entry of the same owner", (layout, keyOf) => {
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
    slow = await createLockApp({ redis: relay.url, layout, watchdogTimeout: 30_000 });
    other = await createLockApp({ redis: redis.url, layout, watchdogTimeout: 30_000 });
  });
  afterAll(async () => {
    await slow?.close();
    await other?.close();
    await relay?.stop();
    await redis?.stop();
  });

  it('the re-entered hold keeps a key at least as long as its local lease', async () => {
    const name = 'review3:keep:1';
    const witness = new HoldWitness();
    let child: Promise<unknown> | undefined;
    let childPttl = -1;
    await locks(slow).run(
      name,
      async () => {
        // A detached call of the same chain: same owner, a re-entry whose attempt is in flight when the body returns.
        child = locks(slow).run(
          name,
          (ctx) =>
            witness.inside('slow', name, ctx.signal, async () => {
              await sleep(50);
              childPttl = await raw.pttl(keyOf(name));
              await sleep(2_500);
            }),
          { leaseTime: 10_000 },
        );
        await sleep(5);
      },
      { leaseTime: 10_000, minHoldTime: 500 },
    );
    await waitUntil(() => childPttl !== -1);
    const contender = locks(other)
      .run(name, (ctx) => witness.inside('other', name, ctx.signal, async () => undefined), { waitTime: 5_000 })
      .catch(() => undefined);
    await child;
    await contender;
    // The child's hold was granted with a 10 s lease: its key must not die within a second.
    expect(childPttl).toBeGreaterThan(5_000);
    expect(witness.violations()).toEqual([]);
  }, 20_000);
});
