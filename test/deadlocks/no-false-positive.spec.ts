import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { createLockApp } from '../support/lock-app';
import { startRedis, TestRedis } from '../support/redis-server';
import { counterKey, storm, type StormResult } from '../support/deadlock-chains';
import { ChildParty, deadlockErrors, done, LocalParty, outcomes } from '../support/deadlock-parties';

/**
 * No false positive: chains that take their locks in one global order never form a cycle, so
 * however long they wait for each other, none is refused. `deadlockCheckAfter` is short (100 ms)
 * so the cross-process check runs on most waits; waitTime is 20 s, so a refusal or a timeout
 * would show.
 */
describe('deadlocks: no false positive without a cycle', () => {
  const CHECK_AFTER = 100;
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let seq = 0;
  const fresh = () => `dl-nofp-${++seq}`;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, deadlockCheckAfter: CHECK_AFTER });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('two chains of one process taking a then b in the same order, 15 rounds each, under contention: no refusal', async () => {
    const p = fresh();
    const [a, b] = [`${p}:a`, `${p}:b`];
    const party = new LocalParty('this', [app], raw);
    const ROUNDS = 15;
    // Each round holds a while it waits for b, and b long enough that the other chain waits for a.
    const loops = ['X', 'Y'].map(async (id) => {
      for (let round = 0; round < ROUNDS; round++) {
        party.start({
          id: `${id}${round}`,
          steps: [{ kind: 'plain', name: a }, { kind: 'plain', name: b }],
          auto: [1],
          counterPrefix: p,
          rmwMs: 30,
        });
        await done(party, `${id}${round}`);
      }
    });
    await Promise.all(loops);
    await party.close();
    expect(deadlockErrors([party])).toEqual([]);
    expect(Object.values(outcomes([party])).filter((outcome) => outcome !== 'ok')).toEqual([]);
    expect(Number(await raw.get(counterKey(p, a)))).toBe(2 * ROUNDS);
    expect(Number(await raw.get(counterKey(p, b)))).toBe(2 * ROUNDS);
  }, 90_000);

  it('two processes, 10 chains each, taking a then b in the same order with waits past deadlockCheckAfter: no refusal across processes', async () => {
    const p = fresh();
    const [a, b] = [`${p}:a`, `${p}:b`];
    const parties = await Promise.all(['one', 'two'].map((label) => ChildParty.spawn(label, redis.url, { deadlockCheckAfter: CHECK_AFTER })));
    try {
      const ROUNDS = 10;
      // A chain holds a for 3 x deadlockCheckAfter (two bodies of 150 ms): the waits outlast the threshold and are checked.
      for (const party of parties) {
        for (let round = 0; round < ROUNDS; round++) {
          party.start({
            id: `${party.label}-${round}`,
            steps: [{ kind: 'plain', name: a }, { kind: 'plain', name: b }],
            auto: [1],
            counterPrefix: p,
            rmwMs: (3 * CHECK_AFTER) / 2,
          });
        }
      }
      await Promise.all(parties.flatMap((party) => Array.from({ length: ROUNDS }, (_, round) => done(party, `${party.label}-${round}`, 120_000))));
      expect(deadlockErrors(parties)).toEqual([]);
      expect(Object.values(outcomes(parties)).filter((outcome) => outcome !== 'ok')).toEqual([]);
      expect(Number(await raw.get(counterKey(p, a)))).toBe(2 * ROUNDS);
      expect(Number(await raw.get(counterKey(p, b)))).toBe(2 * ROUNDS);
    } finally {
      await Promise.all(parties.map((party) => party.close()));
    }
  }, 150_000);

  it('a storm over a plain, a fair, a read-write lock and a semaphore in one global order, in this process and two others: zero refusals, no lost update', async () => {
    const p = fresh();
    const children = await Promise.all(['one', 'two'].map((label) => ChildParty.spawn(label, redis.url, { deadlockCheckAfter: CHECK_AFTER })));
    try {
      const options = (seed: number) => ({ chains: 4, iterations: 12, seed, prefix: p, maxBodyMs: 40 });
      const results: StormResult[] = await Promise.all([
        storm([app], raw, options(1)),
        ...children.map((child, i) => child.storm(options(100 + i))),
      ]);
      const deadlocks = results.flatMap((result) => result.deadlocks);
      const errors = results.flatMap((result) => result.errors);
      expect(deadlocks).toEqual([]);
      expect(errors).toEqual([]);
      expect(results.reduce((sum, result) => sum + result.rounds, 0)).toBe(3 * 4 * 12);
      const counted: Record<string, number> = {};
      for (const result of results) for (const [name, count] of Object.entries(result.counted)) counted[name] = (counted[name] ?? 0) + count;
      for (const [name, count] of Object.entries(counted)) {
        expect({ name, counter: Number(await raw.get(counterKey(p, name))) }).toEqual({ name, counter: count });
      }
    } finally {
      await Promise.all(children.map((child) => child.close()));
    }
  }, 180_000);
});
