import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { createLockApp } from '../support/lock-app';
import { startRedis, TestRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';
import {
  ChildParty,
  done,
  expectCountersExact,
  expectTheOneDeadlock,
  held,
  holders,
  inLine,
  outcomes,
  waiting,
} from '../support/deadlock-parties';

/**
 * A->B / B->A between two processes (docs/deadlocks.md "Across processes"): each chain runs in a
 * child process of its own with `deadlockCheckAfter: 300`. The contract's bound is 1.5 x 300 ms plus
 * the check's round trips; the test allows 10 x 300 ms (a loaded machine), and a 20 s waitTime makes
 * a missed cycle a failure, never a pass. This process only looks (inspect), holding nothing.
 */
describe('deadlocks: A->B / B->A across two processes', () => {
  const CHECK_AFTER = 300;
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let seq = 0;
  const fresh = () => `dl-procs-${++seq}`;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('the wait that closes the cycle is refused within the bound, naming both locks and the other process; the other chain finishes', async () => {
    const p = fresh();
    const [a, b] = [`${p}:a`, `${p}:b`];
    const [one, two] = await Promise.all([
      ChildParty.spawn('one', redis.url, { deadlockCheckAfter: CHECK_AFTER }),
      ChildParty.spawn('two', redis.url, { deadlockCheckAfter: CHECK_AFTER }),
    ]);
    try {
      one.start({ id: 'X', steps: [{ kind: 'plain', name: a }, { kind: 'plain', name: b }], counterPrefix: p });
      await held(one, 'X', 0);
      two.start({ id: 'Y', steps: [{ kind: 'plain', name: b }, { kind: 'plain', name: a }], counterPrefix: p });
      await held(two, 'Y', 0);
      const [xOwner] = await holders(app, 'plain', a);
      const [yOwner] = await holders(app, 'plain', b);
      one.next('X', 1);
      await inLine(app, 'plain', b, 1); // X waits for b (and keeps checking: no cycle yet)
      two.next('Y', 1); // Y's wait for a closes the cycle: Y is the youngest wait
      const closing = await waiting(two, 'Y', 1);
      await done(two, 'Y');
      await done(one, 'X');

      const refusal = expectTheOneDeadlock([one, two], {
        refused: 'two Y step 1',
        locks: [a, b],
        first: { lock: a, owner: xOwner },
        chainOwners: [yOwner],
      });
      const tookMs = refusal.at - closing.at;
      expect(tookMs).toBeLessThan(10 * CHECK_AFTER);
      expect(outcomes([one, two])).toEqual({ X: 'ok', Y: 'deadlock' });
      await expectCountersExact(raw, p, [one, two], [a, b]);
      expect(Number(await raw.get(`counter:${p}:${b}`))).toBe(2);
      // Where the other owner runs, when known, is the other process.
      const step = refusal.error.cycle?.[0];
      if (step?.instance) expect(step.instance.pid).toBe(one.pid);
      // The wait-for records end with their waits (deleted, not left to expire).
      await waitFor(async () => (await raw.keys('*waitfor*')).length === 0, { what: 'no wait-for record left', timeoutMs: 2_000 });
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  }, 90_000);

  it("the cycle's first step names the holder's process (instance host and pid)", async () => {
    const p = fresh();
    const [a, b] = [`${p}:a`, `${p}:b`];
    const [one, two] = await Promise.all([
      ChildParty.spawn('one', redis.url, { deadlockCheckAfter: CHECK_AFTER, clientName: 'party-one' }),
      ChildParty.spawn('two', redis.url, { deadlockCheckAfter: CHECK_AFTER, clientName: 'party-two' }),
    ]);
    try {
      one.start({ id: 'X', steps: [{ kind: 'plain', name: a }, { kind: 'plain', name: b }], counterPrefix: p });
      await held(one, 'X', 0);
      two.start({ id: 'Y', steps: [{ kind: 'plain', name: b }, { kind: 'plain', name: a }], counterPrefix: p });
      await held(two, 'Y', 0);
      one.next('X', 1);
      await inLine(app, 'plain', b, 1);
      two.next('Y', 1);
      await done(two, 'Y');
      await done(one, 'X');
      const refusal = expectTheOneDeadlock([one, two], { refused: 'two Y step 1', locks: [a, b] });
      expect(refusal.error.cycle?.[0].instance).toMatchObject({ pid: one.pid, clientName: 'party-one' });
      expect(typeof refusal.error.cycle?.[0].instance?.host).toBe('string');
      expect(refusal.error.message).toContain(`:${one.pid}`);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  }, 90_000);

  it('both waits close the cycle at about the same moment, 5 times: each time exactly one is refused and the other chain finishes', async () => {
    const [one, two] = await Promise.all([
      ChildParty.spawn('one', redis.url, { deadlockCheckAfter: CHECK_AFTER }),
      ChildParty.spawn('two', redis.url, { deadlockCheckAfter: CHECK_AFTER }),
    ]);
    try {
      for (let round = 0; round < 5; round++) {
        const p = fresh();
        const [a, b] = [`${p}:a`, `${p}:b`];
        const [x, y] = [`X${round}`, `Y${round}`];
        one.start({ id: x, steps: [{ kind: 'plain', name: a }, { kind: 'plain', name: b }], counterPrefix: p });
        two.start({ id: y, steps: [{ kind: 'plain', name: b }, { kind: 'plain', name: a }], counterPrefix: p });
        await Promise.all([held(one, x, 0), held(two, y, 0)]);
        one.next(x, 1);
        two.next(y, 1);
        await Promise.all([done(one, x), done(two, y)]);
        const ended = outcomes([one, two]);
        const pair = [ended[x], ended[y]].sort();
        expect({ round, pair }).toEqual({ round, pair: ['deadlock', 'ok'] });
        await expectCountersExact(raw, p, [one, two], [a, b]);
      }
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  }, 120_000);
});
