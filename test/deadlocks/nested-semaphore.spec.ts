import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { SemaphoreService } from '../../lib';
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
  LocalParty,
  outcomes,
  waiters,
  waiting,
  type Party,
} from '../support/deadlock-parties';

/**
 * The nested semaphore (docs/deadlocks.md "Nested semaphore"): a chain holds 1 of the 2 permits of
 * `exports`; a request for 2 waits ahead in line (it needs the chain's permit: 2 - 1 < 2); the
 * chain's body asks for 1 more and queues behind it (a semaphore's line cannot be passed). The
 * nested request is refused; the outer body catches it and ends, and the 2-permit request is served.
 */
describe('deadlocks: the nested semaphore', () => {
  const CHECK_AFTER = 300;
  const AT_ONCE_MS = 2_000;
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let seq = 0;
  const fresh = () => `dl-sem-${++seq}`;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, deadlockCheckAfter: CHECK_AFTER });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  async function nestedSemaphore(chainParty: LocalParty, bigParty: Party, boundMs: number) {
    const p = fresh();
    const exports = `${p}:exports`;
    chainParty.start({
      id: 'S',
      steps: [
        { kind: 'semaphore', name: exports, permits: 2, take: 1 },
        { kind: 'semaphore', name: exports, permits: 2, take: 1 },
      ],
      catchNested: true,
      counterPrefix: p,
    });
    await held(chainParty, 'S', 0);
    const [chainOwner] = await holders(app, 'semaphore', exports);
    bigParty.start({ id: 'T', steps: [{ kind: 'semaphore', name: exports, permits: 2, take: 2 }], counterPrefix: p });
    await inLine(app, 'semaphore', exports, 1); // the request for 2 waits: 1 permit is free, it needs the chain's
    const [bigOwner] = await waiters(app, 'semaphore', exports);
    expect((await app.get(SemaphoreService).inspect(exports)).available).toBe(1);
    chainParty.next('S', 1); // the nested request for 1 queues behind it: the cycle closes
    const closing = await waiting(chainParty, 'S', 1);
    const chainDone = await done(chainParty, 'S');
    const bigHeld = await held(bigParty, 'T', 0);
    await done(bigParty, 'T');

    const parties = bigParty === chainParty ? [chainParty] : [chainParty, bigParty];
    const refusal = expectTheOneDeadlock(parties, {
      refused: 'this S step 1',
      locks: [exports],
      first: { lock: exports, owner: bigOwner, inLine: true },
      chainOwners: [chainOwner],
    });
    expect(refusal.caught).toBe(true);
    expect(refusal.at - closing.at).toBeLessThan(boundMs);
    expect(outcomes(parties)).toEqual({ S: 'ok', T: 'ok' });
    // The 2-permit request was served once the outer body had ended and given its permit back.
    expect(bigHeld.at).toBeGreaterThanOrEqual(refusal.at);
    expect(bigHeld.at).toBeGreaterThanOrEqual(chainDone.at - 50);
    await expectCountersExact(raw, p, parties, [exports]);
    expect(Number(await raw.get(`counter:${p}:${exports}`))).toBe(1);
    await waitFor(async () => (await app.get(SemaphoreService).inspect(exports)).holders.length === 0, { what: 'the permits back' });
  }

  it('the request for 2 in the same process: the nested request for 1 is refused at once, then the 2 are served', async () => {
    const party = new LocalParty('this', [app], raw);
    await nestedSemaphore(party, party, AT_ONCE_MS);
    await party.close();
  }, 60_000);

  it('the request for 2 from another process: the nested request is refused within the cross-process bound', async () => {
    const party = new LocalParty('this', [app], raw);
    const big = await ChildParty.spawn('big', redis.url, { deadlockCheckAfter: CHECK_AFTER });
    try {
      await nestedSemaphore(party, big, 10 * CHECK_AFTER);
    } finally {
      await party.close();
      await big.close();
    }
  }, 90_000);

  it('no cycle without the bigger request ahead: the nested request for 1 takes the free permit', async () => {
    const p = fresh();
    const exports = `${p}:exports`;
    const party = new LocalParty('this', [app], raw);
    party.start({
      id: 'S',
      steps: [
        { kind: 'semaphore', name: exports, permits: 2, take: 1 },
        { kind: 'semaphore', name: exports, permits: 2, take: 1 },
      ],
      auto: [1],
      counterPrefix: p,
    });
    await done(party, 'S');
    await party.close();
    expect(outcomes([party])).toEqual({ S: 'ok' });
  }, 30_000);
});
