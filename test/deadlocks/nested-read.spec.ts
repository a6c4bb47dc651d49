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
 * The nested read behind a writer (docs/deadlocks.md "The nested read behind a writer: refused"):
 * inside runRead('doc'), a read through another owner (a ReadWriteLock object made outside the
 * body) queues behind a writer in line, and the writer waits for the outer read. The inner read is
 * refused; the outer body catches it and ends, and the writer then gets the lock.
 */
describe('deadlocks: the nested read behind a writer', () => {
  const CHECK_AFTER = 300;
  const AT_ONCE_MS = 2_000;
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let seq = 0;
  const fresh = () => `dl-read-${++seq}`;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, deadlockCheckAfter: CHECK_AFTER });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  /** R reads doc, then (once let) reads it again through an object made outside; W writes doc from `writerParty`. */
  async function nestedRead(readerParty: LocalParty, writerParty: Party, boundMs: number) {
    const p = fresh();
    const doc = `${p}:doc`;
    readerParty.start({
      id: 'R',
      steps: [{ kind: 'read', name: doc }, { kind: 'read', name: doc, via: 'object' }],
      catchNested: true,
      counterPrefix: p,
    });
    await held(readerParty, 'R', 0);
    const [readOwner] = await holders(app, 'read-write', doc);
    writerParty.start({ id: 'W', steps: [{ kind: 'write', name: doc }], counterPrefix: p });
    await inLine(app, 'read-write', doc, 1); // the writer waits for the outer read
    const [writerOwner] = await waiters(app, 'read-write', doc);
    readerParty.next('R', 1); // the inner read queues behind the writer: the cycle closes
    const closing = await waiting(readerParty, 'R', 1);
    const readerDone = await done(readerParty, 'R');
    const writerHeld = await held(writerParty, 'W', 0);
    await done(writerParty, 'W');

    const parties = writerParty === readerParty ? [readerParty] : [readerParty, writerParty];
    const refusal = expectTheOneDeadlock(parties, {
      refused: 'this R step 1',
      locks: [doc],
      // Step 1: the inner read waits behind the writer's wait in line; the writer waits for the outer read.
      first: { lock: doc, owner: writerOwner, inLine: true },
      chainOwners: [readOwner],
    });
    expect(refusal.caught).toBe(true);
    expect(refusal.error.message).toContain(JSON.stringify(doc));
    expect(refusal.at - closing.at).toBeLessThan(boundMs);
    // The outer body ended normally, then the writer got the lock.
    expect(outcomes(parties)).toEqual({ R: 'ok', W: 'ok' });
    expect(writerHeld.at).toBeGreaterThanOrEqual(refusal.at);
    expect(writerHeld.at).toBeGreaterThanOrEqual(readerDone.at - 50);
    await expectCountersExact(raw, p, parties, [doc]);
    expect(Number(await raw.get(`counter:${p}:${doc}`))).toBe(1);
  }

  it('writer in the same process: the inner read is refused at once with LockDeadlockError naming doc', async () => {
    const party = new LocalParty('this', [app], raw);
    await nestedRead(party, party, AT_ONCE_MS);
    await party.close();
  }, 60_000);

  it('writer in another process: the inner read is refused within the cross-process bound', async () => {
    const party = new LocalParty('this', [app], raw);
    const writer = await ChildParty.spawn('writer', redis.url, { deadlockCheckAfter: CHECK_AFTER });
    try {
      await nestedRead(party, writer, 10 * CHECK_AFTER);
    } finally {
      await party.close();
      await writer.close();
    }
  }, 90_000);

  it("the documented fix: the inner read through the chain's own owner (runRead again) re-enters, no refusal, and the writer follows", async () => {
    const p = fresh();
    const doc = `${p}:doc`;
    const party = new LocalParty('this', [app], raw);
    party.start({ id: 'R', steps: [{ kind: 'read', name: doc }, { kind: 'read', name: doc }], counterPrefix: p });
    await held(party, 'R', 0);
    party.start({ id: 'W', steps: [{ kind: 'write', name: doc }], counterPrefix: p });
    await inLine(app, 'read-write', doc, 1);
    party.next('R', 1);
    await held(party, 'R', 1);
    await done(party, 'R');
    await done(party, 'W');
    await party.close();
    expect(outcomes([party])).toEqual({ R: 'ok', W: 'ok' });
  }, 60_000);
});
