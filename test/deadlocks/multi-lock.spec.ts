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
  LocalParty,
  outcomes,
  waiting,
  type Party,
} from '../support/deadlock-parties';

/**
 * A multi-lock's member wait in a cycle (docs/deadlocks.md: "A multi-lock's wait for one member also
 * holds up the members it took already"). Members are taken in key order, so run([a, b]) takes a,
 * then waits for b.
 *
 * - the member wait inside the cycle: Y holds b; M = run([a, b]) takes a and waits for b; Y then
 *   waits for a and closes the cycle (Y refused; M then gets b).
 * - the member wait closing the cycle: X holds c; Y holds a and waits for c; X's body then runs
 *   run([a, b]), whose wait for a closes the cycle (X's multi-lock refused; Y then gets c).
 */
describe('deadlocks: a multi-lock member wait in a cycle', () => {
  const CHECK_AFTER = 300;
  const AT_ONCE_MS = 2_000;
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let seq = 0;
  const fresh = () => `dl-multi-${++seq}`;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, deadlockCheckAfter: CHECK_AFTER });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  async function memberWaitInside(yParty: LocalParty, mParty: Party, boundMs: number) {
    const p = fresh();
    const [a, b] = [`${p}:a`, `${p}:b`];
    yParty.start({ id: 'Y', steps: [{ kind: 'plain', name: b }, { kind: 'plain', name: a }], counterPrefix: p });
    await held(yParty, 'Y', 0);
    const [yOwner] = await holders(app, 'plain', b);
    mParty.start({ id: 'M', steps: [{ kind: 'plain', name: [a, b] }], counterPrefix: p });
    await inLine(app, 'plain', b, 1); // M took a and waits for b
    const [mOwner] = await holders(app, 'plain', a);
    expect(mOwner).toBeDefined();
    yParty.next('Y', 1); // Y waits for a, which M's multi-lock holds: the cycle closes
    const closing = await waiting(yParty, 'Y', 1);
    await Promise.all([done(yParty, 'Y'), done(mParty, 'M')]);

    const parties = mParty === yParty ? [yParty] : [yParty, mParty];
    const refusal = expectTheOneDeadlock(parties, {
      refused: 'this Y step 1',
      locks: [a, b],
      first: { lock: a, owner: mOwner },
      chainOwners: [yOwner],
    });
    expect(refusal.at - closing.at).toBeLessThan(boundMs);
    expect(outcomes(parties)).toEqual({ Y: 'deadlock', M: 'ok' });
    await expectCountersExact(raw, p, parties, [a, b]);
    expect(Number(await raw.get(`counter:${p}:${b}`))).toBe(2);
  }

  async function memberWaitCloses(xParty: LocalParty, yParty: Party, boundMs: number) {
    const p = fresh();
    const [a, b, c] = [`${p}:a`, `${p}:b`, `${p}:c`];
    xParty.start({ id: 'X', steps: [{ kind: 'plain', name: c }, { kind: 'plain', name: [a, b] }], counterPrefix: p });
    await held(xParty, 'X', 0);
    const [xOwner] = await holders(app, 'plain', c);
    yParty.start({ id: 'Y', steps: [{ kind: 'plain', name: a }, { kind: 'plain', name: c }], counterPrefix: p });
    await held(yParty, 'Y', 0);
    const [yOwner] = await holders(app, 'plain', a);
    yParty.next('Y', 1);
    await inLine(app, 'plain', c, 1); // Y holds a, waits for c
    xParty.next('X', 1); // X's multi-lock waits for a (its first member): the cycle closes
    const closing = await waiting(xParty, 'X', 1);
    await Promise.all([done(xParty, 'X'), done(yParty, 'Y')]);

    const parties = yParty === xParty ? [xParty] : [xParty, yParty];
    const refusal = expectTheOneDeadlock(parties, {
      refused: 'this X step 1',
      locks: [a, c],
      first: { lock: a, owner: yOwner },
      chainOwners: [xOwner],
    });
    expect(refusal.at - closing.at).toBeLessThan(boundMs);
    expect(outcomes(parties)).toEqual({ X: 'deadlock', Y: 'ok' });
    await expectCountersExact(raw, p, parties, [a, b, c]);
    expect(Number(await raw.get(`counter:${p}:${c}`))).toBe(2);
    // The refused multi-lock left nothing behind: b was never taken, a stays Y's until Y ended.
    expect(Number((await raw.get(`counter:${p}:${b}`)) ?? 0)).toBe(0);
  }

  it('member wait inside the cycle, one process: the closing wait is refused at once, the multi-lock then gets b', async () => {
    const party = new LocalParty('this', [app], raw);
    await memberWaitInside(party, party, AT_ONCE_MS);
    await party.close();
  }, 60_000);

  it('member wait inside the cycle, the multi-lock in another process: refused within the cross-process bound', async () => {
    const party = new LocalParty('this', [app], raw);
    const m = await ChildParty.spawn('m', redis.url, { deadlockCheckAfter: CHECK_AFTER });
    try {
      await memberWaitInside(party, m, 10 * CHECK_AFTER);
    } finally {
      await party.close();
      await m.close();
    }
  }, 90_000);

  it("member wait closing the cycle, one process: the multi-lock's wait is refused at once", async () => {
    const party = new LocalParty('this', [app], raw);
    await memberWaitCloses(party, party, AT_ONCE_MS);
    await party.close();
  }, 60_000);

  it("member wait closing the cycle, the other chain in another process: the multi-lock's wait is refused within the bound", async () => {
    const party = new LocalParty('this', [app], raw);
    const y = await ChildParty.spawn('y', redis.url, { deadlockCheckAfter: CHECK_AFTER });
    try {
      await memberWaitCloses(party, y, 10 * CHECK_AFTER);
    } finally {
      await party.close();
      await y.close();
    }
  }, 90_000);
});
