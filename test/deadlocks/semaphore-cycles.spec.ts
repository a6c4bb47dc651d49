import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { createLockApp } from '../support/lock-app';
import { startRedis, TestRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';
import {
  ChildParty,
  deadlockErrors,
  describeEvents,
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
 * Semaphore holds in a cycle, and the rule that keeps "any of them" out (docs/deadlocks.md: a wait
 * for n permits needs a holder h only when permits - held(h) < n; "waiting for any of them is
 * never called a deadlock").
 */
describe('deadlocks: semaphores in and out of cycles', () => {
  const CHECK_AFTER = 300;
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let seq = 0;
  const fresh = () => `dl-semcy-${++seq}`;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, deadlockCheckAfter: CHECK_AFTER });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  /** X holds the only permit of s and waits for b; Y holds b and waits for s: Y closes the cycle. */
  async function permitCycle(xParty: Party, yParty: Party, boundMs: number) {
    const p = fresh();
    const [s, b] = [`${p}:s`, `${p}:b`];
    xParty.start({ id: 'X', steps: [{ kind: 'semaphore', name: s, permits: 1 }, { kind: 'plain', name: b }], counterPrefix: p });
    await held(xParty, 'X', 0);
    const [xOwner] = await holders(app, 'semaphore', s);
    yParty.start({ id: 'Y', steps: [{ kind: 'plain', name: b }, { kind: 'semaphore', name: s, permits: 1 }], counterPrefix: p });
    await held(yParty, 'Y', 0);
    const [yOwner] = await holders(app, 'plain', b);
    xParty.next('X', 1);
    await inLine(app, 'plain', b, 1);
    yParty.next('Y', 1);
    const closing = await waiting(yParty, 'Y', 1);
    await Promise.all([done(xParty, 'X'), done(yParty, 'Y')]);
    const parties = xParty === yParty ? [xParty] : [xParty, yParty];
    const refusal = expectTheOneDeadlock(parties, {
      refused: `${yParty.label} Y step 1`,
      locks: [s, b],
      first: { lock: s, owner: xOwner },
      chainOwners: [yOwner],
    });
    expect(refusal.at - closing.at).toBeLessThan(boundMs);
    expect(outcomes(parties)).toEqual({ X: 'ok', Y: 'deadlock' });
    await expectCountersExact(raw, p, parties, [s, b]);
  }

  it('a one-permit semaphore and a lock, one process: the closing wait is refused at once', async () => {
    const party = new LocalParty('this', [app], raw);
    await permitCycle(party, party, 2_000);
    await party.close();
  }, 60_000);

  it('a one-permit semaphore and a lock, across two processes: refused within the bound', async () => {
    const [one, two] = await Promise.all([
      ChildParty.spawn('one', redis.url, { deadlockCheckAfter: CHECK_AFTER }),
      ChildParty.spawn('two', redis.url, { deadlockCheckAfter: CHECK_AFTER }),
    ]);
    try {
      await permitCycle(one, two, 10 * CHECK_AFTER);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  }, 90_000);

  /**
   * s has 2 permits, held by X (which then waits for b) and by Z (which holds on, waiting for
   * nothing); Y holds b and waits for 1 permit of s. Y needs either permit back, not X's in
   * particular: Z's release serves it. No cycle, so no refusal however long X waits.
   */
  async function anyOfThem(xParty: Party, yParty: Party, zParty: Party) {
    const p = fresh();
    const [s, b] = [`${p}:s`, `${p}:b`];
    xParty.start({ id: 'X', steps: [{ kind: 'semaphore', name: s, permits: 2 }, { kind: 'plain', name: b }], counterPrefix: p });
    await held(xParty, 'X', 0);
    zParty.start({ id: 'Z', steps: [{ kind: 'semaphore', name: s, permits: 2 }], holdInnermost: true, counterPrefix: p });
    await held(zParty, 'Z', 0);
    yParty.start({ id: 'Y', steps: [{ kind: 'plain', name: b }, { kind: 'semaphore', name: s, permits: 2 }], counterPrefix: p });
    await held(yParty, 'Y', 0);
    yParty.next('Y', 1);
    await inLine(app, 'semaphore', s, 1);
    xParty.next('X', 1);
    const xWaits = await waiting(xParty, 'X', 1);
    await inLine(app, 'plain', b, 1);
    // A non-event needs a window: several checks of both waits (every deadlockCheckAfter / 2).
    await waitFor(() => Date.now() - xWaits.at > 6 * CHECK_AFTER, { what: 'X to wait 6 x deadlockCheckAfter' });
    const parties = [...new Set([xParty, yParty, zParty])];
    expect({ deadlocks: deadlockErrors(parties).length, events: describeEvents(parties) }).toMatchObject({ deadlocks: 0 });
    zParty.next('Z', 1); // Z gives its permit back: Y, then X, go on
    await Promise.all([done(xParty, 'X'), done(yParty, 'Y'), done(zParty, 'Z')]);
    expect(deadlockErrors(parties)).toEqual([]);
    expect(outcomes(parties)).toEqual({ X: 'ok', Y: 'ok', Z: 'ok' });
    await expectCountersExact(raw, p, parties, [b]);
  }

  it('"any of them" is no edge, one process: no refusal; the other holder\'s release serves the wait', async () => {
    const party = new LocalParty('this', [app], raw);
    await anyOfThem(party, party, party);
    await party.close();
  }, 60_000);

  it('"any of them" is no edge, across three processes: no refusal; the other holder\'s release serves the wait', async () => {
    const [one, two] = await Promise.all([
      ChildParty.spawn('one', redis.url, { deadlockCheckAfter: CHECK_AFTER }),
      ChildParty.spawn('two', redis.url, { deadlockCheckAfter: CHECK_AFTER }),
    ]);
    const here = new LocalParty('this', [app], raw);
    try {
      await anyOfThem(one, two, here);
    } finally {
      await here.close();
      await Promise.all([one.close(), two.close()]);
    }
  }, 90_000);
});
