import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockModule, type LockModuleOptions } from '../../lib';
import { createLockApp } from '../support/lock-app';
import { startRedis, TestRedis } from '../support/redis-server';
import {
  ChildParty,
  deadlockErrors,
  done,
  expectTheOneDeadlock,
  held,
  inLine,
  outcomes,
  waiting,
  type Party,
} from '../support/deadlock-parties';

/**
 * The `deadlockCheckAfter` option: a whole number of ms >= 0, checked at bootstrap; 0 turns the
 * cross-process check off (a two-process cycle then ends only by waitTime); the default is 1000 ms
 * (no cross-process refusal before a wait has lasted that long).
 */
describe('deadlocks: the deadlockCheckAfter option', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let seq = 0;
  const fresh = () => `dl-opt-${++seq}`;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it.each([-1, 1.5, 'x', null, Number.NaN, Number.POSITIVE_INFINITY])('deadlockCheckAfter: %p fails at bootstrap, naming the option', async (value) => {
    await expect(createLockApp({ redis: redis.url, deadlockCheckAfter: value as unknown as number })).rejects.toThrow(/deadlockCheckAfter/);
  });

  it('forRootAsync checks it too', async () => {
    const { Test } = await import('@nestjs/testing');
    const building = Test.createTestingModule({
      imports: [LockModule.forRootAsync({ useFactory: (): LockModuleOptions => ({ redis: redis.url, deadlockCheckAfter: -5 }) })],
    }).compile();
    await expect(building.then(async (moduleRef) => {
      await moduleRef.init();
      await moduleRef.close();
    })).rejects.toThrow(/deadlockCheckAfter/);
  });

  it('0 and whole numbers are accepted', async () => {
    for (const value of [0, 1, 1000]) {
      const ok = await createLockApp({ redis: redis.url, deadlockCheckAfter: value });
      await ok.close();
    }
  });

  /** X (in `one`) holds a then waits for b; Y (in `two`) holds b then waits for a. */
  async function twoProcessCycle(one: Party, two: Party, p: string, waitTime = 20_000) {
    const [a, b] = [`${p}:a`, `${p}:b`];
    one.start({ id: 'X', steps: [{ kind: 'plain', name: a }, { kind: 'plain', name: b, waitTime }], counterPrefix: p });
    await held(one, 'X', 0);
    two.start({ id: 'Y', steps: [{ kind: 'plain', name: b }, { kind: 'plain', name: a, waitTime }], counterPrefix: p });
    await held(two, 'Y', 0);
    one.next('X', 1);
    await inLine(app, 'plain', b, 1);
    two.next('Y', 1);
    const closing = await waiting(two, 'Y', 1);
    await Promise.all([done(one, 'X', 60_000), done(two, 'Y', 60_000)]);
    return { a, b, closing };
  }

  it('0 turns the cross-process check off: a two-process cycle ends by waitTime (LockTimeoutError), never as a deadlock', async () => {
    const WAIT = 3_000;
    const [one, two] = await Promise.all([
      ChildParty.spawn('one', redis.url, { deadlockCheckAfter: 0 }),
      ChildParty.spawn('two', redis.url, { deadlockCheckAfter: 0 }),
    ]);
    try {
      await twoProcessCycle(one, two, fresh(), WAIT);
      expect(deadlockErrors([one, two])).toEqual([]);
      const ended = outcomes([one, two]);
      // X started waiting first, so its waitTime runs out first; its body's end frees a for Y. (Y may
      // run out too when its own deadline falls before that release.)
      expect(ended.X).toBe('timeout');
      expect(['ok', 'timeout']).toContain(ended.Y);
      const timedOut = [one, two].flatMap((party) => party.events).find((event) => event.ev === 'refused' && event.chain === 'X');
      const xWaiting = one.events.find((event) => event.ev === 'waiting' && event.chain === 'X' && event.step === 1);
      expect(timedOut && xWaiting && timedOut.at - xWaiting.at).toBeGreaterThanOrEqual(WAIT - 50);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  }, 90_000);

  it('default (1000 ms): a two-process cycle is refused after the wait lasted about that long, within 1.5 x it plus round trips (generous bound)', async () => {
    const [one, two] = await Promise.all([ChildParty.spawn('one', redis.url), ChildParty.spawn('two', redis.url)]);
    try {
      const { a, b, closing } = await twoProcessCycle(one, two, fresh());
      const refusal = expectTheOneDeadlock([one, two], { refused: 'two Y step 1', locks: [a, b] });
      const tookMs = refusal.at - closing.at;
      expect(tookMs).toBeGreaterThanOrEqual(1_000 - 50);
      expect(tookMs).toBeLessThan(10_000);
      expect(outcomes([one, two])).toEqual({ X: 'ok', Y: 'deadlock' });
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  }, 90_000);

  it('0 leaves the in-process check on: a cycle in one process is still refused at once', async () => {
    const p = fresh();
    const [one] = await Promise.all([ChildParty.spawn('one', redis.url, { deadlockCheckAfter: 0 })]);
    try {
      const { a, b, closing } = await twoProcessCycle(one, one, p);
      const refusal = expectTheOneDeadlock([one], { refused: 'one Y step 1', locks: [a, b] });
      expect(refusal.at - closing.at).toBeLessThan(2_000);
    } finally {
      await one.close();
    }
  }, 90_000);
});
