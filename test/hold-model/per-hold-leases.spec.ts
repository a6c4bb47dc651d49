import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService, ReadWriteLockService } from '../../lib';
import { HoldWitness } from '../support/hold-witness';
import { createLockApp, releasesSettled, sleep } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

const WATCHDOG = 3_000; // renewed every second: a hold cut short runs out long before the next round

/**
 * Each hold keeps its own lease, and the lock lives as long as its longest hold: a re-entry with a
 * shorter lease, a read with a lease inside a watchdog write, or a multi-lock member taken long
 * before the last one never lets another owner in while the body runs with a live signal.
 */
describe('hold model: per-hold leases', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let other: TestingModule;
  let third: TestingModule;
  let seq = 0;
  const fresh = (prefix: string) => `${prefix}-${++seq}`;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    const options = { redis: redis.url, watchdogTimeout: WATCHDOG };
    app = await createLockApp(options);
    other = await createLockApp(options);
    third = await createLockApp(options);
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await third?.close();
    await redis?.stop();
  });

  it('re-entry with a shorter leaseTime does not cut the outer watchdog hold: nobody else enters while the outer body runs', async () => {
    const witness = new HoldWitness();
    const name = fresh('reentry');
    const locks = app.get(LockService);
    let otherRun: Promise<unknown> | undefined;
    await locks.run(name, ({ signal }) =>
      witness.inside('outer', name, signal, async () => {
        otherRun = other
          .get(LockService)
          .run(name, ({ signal: theirs }) => witness.inside('other', name, theirs, () => undefined), { waitTime: 5_000 })
          .catch((error: unknown) => error);
        // The inner hold outlives its own lease (its release would re-arm the key, hiding the cut).
        await locks.run(name, () => sleep(400), { leaseTime: 100 });
        // Well before the outer hold's next renewal.
        await sleep(300);
      }),
    );
    await otherRun;
    expect(witness.violations()).toEqual([]);
  });

  it('a read with leaseTime: 100 inside a watchdog runWrite does not shorten the write: no other writer at +300 ms', async () => {
    const witness = new HoldWitness();
    const name = fresh('ledger-rw');
    const rw = app.get(ReadWriteLockService);
    const resource = `rw:${name}`;
    let otherRun: Promise<unknown> | undefined;
    await rw.runWrite(name, ({ signal }) =>
      witness.inside('writer', resource, signal, async () => {
        await rw.runRead(name, () => sleep(10), { leaseTime: 100 });
        otherRun = other
          .get(ReadWriteLockService)
          .runWrite(name, ({ signal: theirs }) => witness.inside('other writer', resource, theirs, () => undefined), { waitTime: 5_000 })
          .catch((error: unknown) => error);
        await sleep(700);
      }),
    );
    await otherRun;
    expect(witness.violations()).toEqual([]);
  });

  it('a read with leaseTime: 100 still held inside a watchdog write does not shorten the write', async () => {
    const witness = new HoldWitness();
    const name = fresh('ledger-rw-held');
    const rw = app.get(ReadWriteLockService);
    const resource = `rw:${name}`;
    let otherRun: Promise<unknown> | undefined;
    await rw.runWrite(name, ({ signal }) =>
      witness.inside('writer', resource, signal, async () => {
        // Bound to the writer's owner (the call chain holds the name): a downgrade read with its own short lease.
        const read = rw.getReadWriteLock(name).readLock();
        await read.lock({ leaseTime: 100 });
        otherRun = other
          .get(ReadWriteLockService)
          .runWrite(name, ({ signal: theirs }) => witness.inside('other writer', resource, theirs, () => undefined), { waitTime: 5_000 })
          .catch((error: unknown) => error);
        await sleep(700);
      }),
    );
    await otherRun;
    expect(witness.violations()).toEqual([]);
  });

  it('multi-lock with leaseTime: the first member does not expire while the second is awaited', async () => {
    const witness = new HoldWitness();
    const base = fresh('pair');
    const [first, second] = [`${base}:a`, `${base}:b`]; // taken in this order (by Redis key)
    const leaseTime = 1_000;
    // Someone holds the second member for twice the lease.
    const secondHeld = other
      .get(LockService)
      .run(second, ({ signal }) => witness.inside('holder of b', second, signal, () => sleep(leaseTime * 2)))
      .catch((error: unknown) => error);
    await waitFor(async () => (await raw.exists(`lock:{${second}}`)) === 1, { what: `${second} held` });
    const multi = app
      .get(LockService)
      .run([first, second], ({ signal }) => witness.inside('multi', [first, second], signal, () => sleep(300)), { leaseTime, waitTime: 10_000 })
      .catch((error: unknown) => error);
    await waitFor(async () => (await raw.exists(`lock:{${first}}`)) === 1, { what: `the multi-lock to take ${first}` });
    // A third owner waits for the first member and holds it for a while once it gets it.
    const firstTaken = third
      .get(LockService)
      .run(first, ({ signal }) => witness.inside('taker of a', first, signal, () => sleep(leaseTime * 1.5)), { waitTime: 10_000 })
      .catch((error: unknown) => error);
    await Promise.all([secondHeld, multi, firstTaken]);
    await Promise.all([releasesSettled(app), releasesSettled(other), releasesSettled(third)]);
    expect(witness.violations()).toEqual([]);
  });
});
