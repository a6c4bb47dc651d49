import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { createLockApp } from '../support/lock-app';
import { startRedis, TestRedis } from '../support/redis-server';
import {
  done,
  expectCountersExact,
  expectTheOneDeadlock,
  held,
  holders,
  inLine,
  LocalParty,
  outcomes,
  waiting,
} from '../support/deadlock-parties';

/**
 * A->B / B->A between two call chains of one process (docs/deadlocks.md "In one process: at
 * once"). The modules run with `deadlockCheckAfter: 0` (the cross-process check off), so whatever
 * refuses the cycle is the in-process check. The bound is generous (2 s): "at once" means before the
 * wait sleeps, and a 20 s waitTime makes a missed cycle a failure, never a pass.
 */
describe('deadlocks: A->B / B->A in one process', () => {
  const AT_ONCE_MS = 2_000;
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let other: TestingModule;
  let seq = 0;
  const fresh = () => `dl-inproc-${++seq}`;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, deadlockCheckAfter: 0 });
    other = await createLockApp({ redis: redis.url, deadlockCheckAfter: 0 });
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await redis?.stop();
  });

  async function abba(xApp: number, yApp: number, apps: TestingModule[] = [app, other], boundMs = AT_ONCE_MS) {
    const p = fresh();
    const [a, b] = [`${p}:a`, `${p}:b`];
    const party = new LocalParty('this', apps, raw);
    party.start({ id: 'X', steps: [{ kind: 'plain', name: a, app: xApp }, { kind: 'plain', name: b, app: xApp }], counterPrefix: p });
    await held(party, 'X', 0);
    party.start({ id: 'Y', steps: [{ kind: 'plain', name: b, app: yApp }, { kind: 'plain', name: a, app: yApp }], counterPrefix: p });
    await held(party, 'Y', 0);
    const [xOwner] = await holders(app, 'plain', a);
    const [yOwner] = await holders(app, 'plain', b);
    party.next('X', 1);
    await inLine(app, 'plain', b, 1); // X waits for b: no cycle yet
    party.next('Y', 1); // Y's wait for a closes the cycle
    const closing = await waiting(party, 'Y', 1);
    await done(party, 'Y');
    await done(party, 'X');
    await party.close();

    const refusal = expectTheOneDeadlock([party], {
      refused: 'this Y step 1',
      locks: [a, b],
      first: { lock: a, owner: xOwner },
      chainOwners: [yOwner],
    });
    expect(refusal.caught).toBe(false);
    expect(refusal.at - closing.at).toBeLessThan(boundMs);
    // X goes on: Y's refusal ended Y's body, which released b; X then took it.
    expect(outcomes([party])).toEqual({ X: 'ok', Y: 'deadlock' });
    expect(party.events.filter((e) => e.ev === 'held').map((e) => `${e.chain}${(e as { step: number }).step}`)).toEqual(['X0', 'Y0', 'X1']);
    await expectCountersExact(raw, p, [party], [a, b]);
    expect(Number(await raw.get(`counter:${p}:${b}`))).toBe(2);
    return refusal;
  }

  it('two chains on one module instance: the wait that closes the cycle is refused at once, naming both locks', async () => {
    const refusal = await abba(0, 0);
    // The cycle's steps: Y waits for a (held by X), X waits for b (held by Y's chain).
    expect(refusal.error.cycle).toHaveLength(2);
    expect(refusal.error.message).toMatch(/^Deadlock: /);
  }, 60_000);

  it('two chains on two module instances of one process: still at once (the graph is process-wide)', async () => {
    await abba(0, 1);
  }, 60_000);

  it('the error is a LockDeadlockError the caller can catch with instanceof, as thrown by run()', async () => {
    const { LockDeadlockError, LockError, LockService } = await import('../../lib');
    const p = fresh();
    const [a, b] = [`${p}:a`, `${p}:b`];
    const locks = app.get(LockService);
    let releaseX!: () => void;
    const xMayTakeB = new Promise<void>((resolve) => (releaseX = resolve));
    let xHoldsA!: () => void;
    const xHeld = new Promise<void>((resolve) => (xHoldsA = resolve));
    const x = locks.run(a, async () => {
      xHoldsA();
      await xMayTakeB;
      return locks.run(b, async () => 'x-done', { waitTime: 20_000 });
    }, { waitTime: 20_000 });
    await xHeld;
    const y = locks.run(b, async () => {
      releaseX();
      await inLine(app, 'plain', b, 1);
      const startedAt = Date.now();
      try {
        await locks.run(a, async () => 'never', { waitTime: 20_000 });
        return 'y-got-a';
      } catch (error) {
        return { error, after: Date.now() - startedAt };
      }
    }, { waitTime: 20_000 });
    const yResult = (await y) as { error: unknown; after: number };
    expect(await x).toBe('x-done');
    expect(yResult.error).toBeInstanceOf(LockDeadlockError);
    expect(yResult.error).toBeInstanceOf(LockError);
    expect(yResult.after).toBeLessThan(AT_ONCE_MS);
    const error = yResult.error as InstanceType<typeof LockDeadlockError>;
    expect(error.name).toBe('LockDeadlockError');
    expect([...error.lockName].sort()).toEqual([a, b]);
    expect(error.cycle[0].lock).toBe(a);
  }, 60_000);

  it('two module instances of one process with the cross-process check on (300 ms): refused, at worst within its bound', async () => {
    const apps = [
      await createLockApp({ redis: redis.url, deadlockCheckAfter: 300 }),
      await createLockApp({ redis: redis.url, deadlockCheckAfter: 300 }),
    ];
    try {
      await abba(0, 1, apps, 10 * 300);
    } finally {
      for (const each of apps) await each.close();
    }
  }, 60_000);

  it('both waits close the cycle in the same tick, 10 times: each time exactly one is refused and the other chain finishes', async () => {
    const party = new LocalParty('this', [app], raw);
    for (let round = 0; round < 10; round++) {
      const p = fresh();
      const [a, b] = [`${p}:a`, `${p}:b`];
      const [x, y] = [`X${round}`, `Y${round}`];
      party.start({ id: x, steps: [{ kind: 'plain', name: a }, { kind: 'plain', name: b }], counterPrefix: p });
      party.start({ id: y, steps: [{ kind: 'plain', name: b }, { kind: 'plain', name: a }], counterPrefix: p });
      await Promise.all([held(party, x, 0), held(party, y, 0)]);
      party.next(x, 1);
      party.next(y, 1);
      await Promise.all([done(party, x), done(party, y)]);
      const ended = outcomes([party]);
      expect({ round, pair: [ended[x], ended[y]].sort() }).toEqual({ round, pair: ['deadlock', 'ok'] });
      await expectCountersExact(raw, p, [party], [a, b]);
    }
    await party.close();
  }, 60_000);
});
