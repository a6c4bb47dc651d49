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
  waiters,
  waiting,
  type Party,
} from '../support/deadlock-parties';

/**
 * Cycles through a fair lock's line (docs/deadlocks.md: "a wait waits for the waits ahead of it in
 * line that it cannot pass ... and so for the holds those need"):
 *
 * - nested other owner: chain X holds fair f; W (a chain holding nothing) waits for f; X's body asks
 *   for f through a lock object made outside (another owner), which queues behind W. On an
 *   exclusive lock the inner wait needs X's own hold directly (the wait ahead needs the same hold),
 *   so the shortest cycle is one step: either form is the contract's (the last step's owner is X's).
 * - two locks: X holds fair f; W waits for f; Y holds g and waits for f behind W; X then waits for
 *   g and closes the cycle. X's wait is refused; W, then Y, get f once X's body has ended.
 */
describe('deadlocks: a cycle through a fair lock line', () => {
  const CHECK_AFTER = 300;
  const AT_ONCE_MS = 2_000;
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let seq = 0;
  const fresh = () => `dl-fair-${++seq}`;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, deadlockCheckAfter: CHECK_AFTER });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  async function lineOnly(xParty: LocalParty, wParty: Party, boundMs: number) {
    const p = fresh();
    const f = `${p}:f`;
    xParty.start({ id: 'X', steps: [{ kind: 'fair', name: f }, { kind: 'fair', name: f, via: 'object' }], catchNested: true, counterPrefix: p });
    await held(xParty, 'X', 0);
    const [xOwner] = await holders(app, 'fair', f);
    wParty.start({ id: 'W', steps: [{ kind: 'fair', name: f }], counterPrefix: p });
    await inLine(app, 'fair', f, 1);
    const [wOwner] = await waiters(app, 'fair', f);
    xParty.next('X', 1); // X's inner wait (another owner) queues behind W
    const closing = await waiting(xParty, 'X', 1);
    const xDone = await done(xParty, 'X');
    const wHeld = await held(wParty, 'W', 0);
    await done(wParty, 'W');

    const parties = wParty === xParty ? [xParty] : [xParty, wParty];
    const refusal = expectTheOneDeadlock(parties, {
      refused: 'this X step 1',
      locks: [f],
      first: { lock: f },
      chainOwners: [xOwner],
    });
    // Step 1 names X's own hold, or W's wait ahead in line (which needs X's hold).
    expect([xOwner, wOwner]).toContain(refusal.error.cycle?.[0].owner);
    if (refusal.error.cycle?.[0].owner === wOwner) expect(refusal.error.cycle?.[0].inLine).toBe(true);
    expect(refusal.at - closing.at).toBeLessThan(boundMs);
    expect(outcomes(parties)).toEqual({ X: 'ok', W: 'ok' });
    expect(wHeld.at).toBeGreaterThanOrEqual(xDone.at - 50);
    await expectCountersExact(raw, p, parties, [f]);
    expect(Number(await raw.get(`counter:${p}:${f}`))).toBe(2);
  }

  async function twoLocks(xParty: LocalParty, others: Party, boundMs: number) {
    const p = fresh();
    const [f, g] = [`${p}:f`, `${p}:g`];
    xParty.start({ id: 'X', steps: [{ kind: 'fair', name: f }, { kind: 'plain', name: g }], counterPrefix: p });
    await held(xParty, 'X', 0);
    const [xOwner] = await holders(app, 'fair', f);
    others.start({ id: 'W', steps: [{ kind: 'fair', name: f }], counterPrefix: p });
    await inLine(app, 'fair', f, 1); // W: first in f's line
    others.start({ id: 'Y', steps: [{ kind: 'plain', name: g }, { kind: 'fair', name: f }], counterPrefix: p });
    await held(others, 'Y', 0);
    const [yOwner] = await holders(app, 'plain', g);
    others.next('Y', 1);
    await inLine(app, 'fair', f, 2); // Y: behind W in f's line, Y's chain holding g
    xParty.next('X', 1); // X waits for g: the cycle closes
    const closing = await waiting(xParty, 'X', 1);
    await Promise.all([done(xParty, 'X'), done(others, 'W'), done(others, 'Y')]);

    const parties = others === xParty ? [xParty] : [xParty, others];
    const refusal = expectTheOneDeadlock(parties, {
      refused: 'this X step 1',
      locks: [f, g],
      first: { lock: g, owner: yOwner },
      chainOwners: [xOwner],
    });
    expect(refusal.at - closing.at).toBeLessThan(boundMs);
    expect(outcomes(parties)).toEqual({ X: 'deadlock', W: 'ok', Y: 'ok' });
    // The fair line's order holds: W before Y.
    const wHeld = await held(others, 'W', 0);
    const yHeld = await held(others, 'Y', 1);
    expect(yHeld.at).toBeGreaterThanOrEqual(wHeld.at);
    await expectCountersExact(raw, p, parties, [f, g]);
    expect(Number(await raw.get(`counter:${p}:${f}`))).toBe(3);
  }

  it('nested other owner, all in one process: the inner wait (behind the queued waiter) is refused at once, the waiter then gets f', async () => {
    const party = new LocalParty('this', [app], raw);
    await lineOnly(party, party, AT_ONCE_MS);
    await party.close();
  }, 60_000);

  it('nested other owner, the queued waiter in another process: refused (at once: X\'s own hold is local), the waiter then gets f', async () => {
    const party = new LocalParty('this', [app], raw);
    const w = await ChildParty.spawn('w', redis.url, { deadlockCheckAfter: CHECK_AFTER });
    try {
      await lineOnly(party, w, AT_ONCE_MS);
    } finally {
      await party.close();
      await w.close();
    }
  }, 90_000);

  it('two locks, all in one process: the wait that closes the cycle is refused at once; W then Y get f', async () => {
    const party = new LocalParty('this', [app], raw);
    await twoLocks(party, party, AT_ONCE_MS);
    await party.close();
  }, 60_000);

  it('two locks, W and Y in another process: refused within the cross-process bound; W then Y get f', async () => {
    const party = new LocalParty('this', [app], raw);
    const others = await ChildParty.spawn('others', redis.url, { deadlockCheckAfter: CHECK_AFTER });
    try {
      await twoLocks(party, others, 10 * CHECK_AFTER);
    } finally {
      await party.close();
      await others.close();
    }
  }, 90_000);
});
