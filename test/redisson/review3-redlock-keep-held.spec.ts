import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService } from '../../lib';
import type { RedLock } from '../../lib/locks/red-lock';
import { createLockApp, sleep } from '../support/lock-app';
import type { TestRedis } from '../support/redis-server';
import { startRedisServers, stopRedisServers } from '../support/redis-servers';
import { DelayRelay } from '../support/delay-relay';

/**
 * Review 3 (issue 33): RedLock's `keepHeldFor` (minHoldTime) forgets the hold and sends an exact
 * renewal to every master. A re-entry round of the same owner sent before it (on every master:
 * extend-only renewal to its lease) runs first in Redis; the exact renewal then shortens each key to
 * `ms`. The round's grant is recorded as a fresh hold with the full lease (the release counter of
 * red-lock-traffic.ts does not count `keepHeldFor`): the masters' keys die at `ms`, long before the
 * hold's local lease, and another owner gets in.
 */
describe.each(['redisson', 'native'] as const)("review3: layout '%s' RedLock minHoldTime release against a re-entry in flight", (layout) => {
  let masters: TestRedis[];
  let relays: DelayRelay[];
  let raws: Redis[];
  let app: TestingModule;
  let other: TestingModule;
  const redLock = (module: TestingModule, name: string): RedLock => module.get(LockService).getRedLock(name) as RedLock;

  beforeAll(async () => {
    masters = await startRedisServers(3);
    raws = masters.map((m) => m.client());
    relays = await Promise.all(masters.map((m) => DelayRelay.start(m.port, 20)));
    const base = { layout, watchdogTimeout: 30_000 };
    app = await createLockApp({ ...base, redis: masters[0].url, redlock: { clients: relays.map((r) => r.url), masterTimeout: 1_000 } });
    other = await createLockApp({ ...base, redis: masters[0].url, redlock: { clients: masters.map((m) => m.url), masterTimeout: 1_000 } });
  });
  afterAll(async () => {
    await Promise.all([app?.close(), other?.close()]);
    raws?.forEach((r) => r.disconnect());
    await Promise.all((relays ?? []).map((r) => r.stop()));
    await stopRedisServers(masters);
  });

  it("the re-entry's grant keeps keys as long as its lease", async () => {
    const name = `review3:redlock:keep:${layout}`;
    const lock = redLock(app, name);
    expect(await lock.tryLock({ waitTime: 0, leaseTime: 20_000 })).toBe(true);
    // A second flow of the same owner re-enters; its round is on the wire when the first lets go with minHoldTime.
    const reentry = lock.tryLock({ waitTime: 2_000, leaseTime: 20_000 });
    await sleep(10);
    await lock.keepHeldFor(300).catch(() => undefined);
    const reentered = await reentry;
    await sleep(600);
    const present = (await Promise.all(raws.map((r) => r.exists(lock.masterKey)))).reduce((x, y) => x + y, 0);
    const intruder = redLock(other, name);
    const intruderGot = await intruder.tryLock({ waitTime: 0, leaseTime: 5_000 });
    if (intruderGot) await intruder.unlock();
    await lock.unlock().catch(() => undefined);
    expect({ reentered, present, intruderGot }).toEqual({ reentered: true, present: 3, intruderGot: false });
  }, 20_000);
});
