import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { createLockApp } from '../support/lock-app';
import { startRedis, TestRedis } from '../support/redis-server';
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
 * A three-party cycle across three processes: P1 holds a and waits for b, P2 holds b and waits for
 * c, P3 holds c and waits for a. The check follows holder -> wait record -> ... over two records
 * before it comes back to P3's own chain. P3's wait closes the cycle (youngest) and is the only one
 * refused; P1 and P2 then get their locks, one after the other.
 */
describe('deadlocks: a three-party cycle across three processes', () => {
  const CHECK_AFTER = 300;
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('a->b, b->c, c->a: the closing wait is refused within the bound naming a, b and c; the two others finish', async () => {
    const p = 'dl-three';
    const [a, b, c] = [`${p}:a`, `${p}:b`, `${p}:c`];
    const parties = await Promise.all(
      ['p1', 'p2', 'p3'].map((label) => ChildParty.spawn(label, redis.url, { deadlockCheckAfter: CHECK_AFTER })),
    );
    const [p1, p2, p3] = parties;
    try {
      p1.start({ id: 'C1', steps: [{ kind: 'plain', name: a }, { kind: 'plain', name: b }], counterPrefix: p });
      p2.start({ id: 'C2', steps: [{ kind: 'plain', name: b }, { kind: 'plain', name: c }], counterPrefix: p });
      p3.start({ id: 'C3', steps: [{ kind: 'plain', name: c }, { kind: 'plain', name: a }], counterPrefix: p });
      await Promise.all([held(p1, 'C1', 0), held(p2, 'C2', 0), held(p3, 'C3', 0)]);
      const [owner1] = await holders(app, 'plain', a);
      const [owner2] = await holders(app, 'plain', b);
      const [owner3] = await holders(app, 'plain', c);

      p1.next('C1', 1);
      await inLine(app, 'plain', b, 1); // 1 waits for 2
      p2.next('C2', 1);
      await inLine(app, 'plain', c, 1); // 2 waits for 3: a chain, no cycle yet
      p3.next('C3', 1); // 3 waits for 1: the cycle closes
      const closing = await waiting(p3, 'C3', 1);
      await Promise.all([done(p1, 'C1'), done(p2, 'C2'), done(p3, 'C3')]);

      const refusal = expectTheOneDeadlock(parties, {
        refused: 'p3 C3 step 1',
        locks: [a, b, c],
        first: { lock: a, owner: owner1 },
        chainOwners: [owner3],
      });
      // The steps in order: 3 waits for a (held by 1), 1 for b (held by 2), 2 for c (held by 3).
      expect(refusal.error.cycle?.map((step) => [step.lock, step.owner])).toEqual([
        [a, owner1],
        [b, owner2],
        [c, owner3],
      ]);
      expect(refusal.at - closing.at).toBeLessThan(10 * CHECK_AFTER);
      expect(outcomes(parties)).toEqual({ C1: 'ok', C2: 'ok', C3: 'deadlock' });
      await expectCountersExact(raw, p, parties, [a, b, c]);
      expect(Number(await raw.get(`counter:${p}:${b}`))).toBe(2);
      expect(Number(await raw.get(`counter:${p}:${c}`))).toBe(2);
    } finally {
      await Promise.all(parties.map((party) => party.close()));
    }
  }, 120_000);
});
