import type { TestingModule } from '@nestjs/testing';
import { LockError, LockService } from '../../lib';
import { afterWritesFlushed, stallEventLoop } from '../support/event-loop';
import { HoldWitness } from '../support/hold-witness';
import { createLockApp, sleep } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

/**
 * A fixed lease is a promise with an end: the body is told (its signal aborts) before Redis lets
 * the next owner in, and a grant counts from when its attempt was sent, so a reply handled after
 * the lease already ended (a GC pause, CPU-bound work) never starts the body with a live signal.
 */
describe('hold model: the lease clock', () => {
  let redis: TestRedis;
  let app: TestingModule;
  let other: TestingModule;
  let seq = 0;
  const fresh = () => `lease-${++seq}`;

  beforeAll(async () => {
    redis = await startRedis();
    // The default watchdog (30 s, a round every 10 s): a fixed lease must not wait for a round.
    app = await createLockApp({ redis: redis.url });
    other = await createLockApp({ redis: redis.url });
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await redis?.stop();
  });

  it('a fixed lease of 300 ms that runs out aborts the signal before the next owner enters', async () => {
    const witness = new HoldWitness();
    const name = fresh();
    let entered = false;
    const first = app
      .get(LockService)
      .run(
        name,
        ({ signal }) =>
          witness.inside('first', name, signal, async () => {
            entered = true;
            await sleep(1_500);
          }),
        { leaseTime: 300 },
      )
      .catch((error: unknown) => error);
    await waitFor(() => entered, { what: 'the first body to start' });
    const second = other
      .get(LockService)
      .run(name, ({ signal }) => witness.inside('second', name, signal, () => undefined), { waitTime: 5_000 })
      .catch((error: unknown) => error);
    await Promise.all([first, second]);
    expect(witness.violations()).toEqual([]);
  });

  it('the signal of a fixed lease that ran out aborts with a LockError', async () => {
    const witness = new HoldWitness();
    const name = fresh();
    await app.get(LockService).run(name, ({ signal }) => witness.inside('holder', name, signal, () => sleep(1_000)), { leaseTime: 300 });
    const [visit] = witness.visits;
    expect(visit.abortReason).toBeInstanceOf(LockError);
    // At the lease's end (give or take a drift margin and a loaded machine), not a watchdog round later.
    expect(visit.abortedAt! - visit.enteredAt).toBeLessThan(800);
  });

  it('a grant whose reply is handled after its lease ended does not start the body with a live signal', async () => {
    const witness = new HoldWitness();
    const name = fresh();
    const first = app
      .get(LockService)
      .run(name, ({ signal }) => witness.inside('late grantee', name, signal, () => sleep(1_000)), { leaseTime: 200, waitTime: 0 })
      .catch((error: unknown) => error);
    // The attempt is on the wire; the process stalls while Redis grants it and the 200 ms lease runs out.
    await afterWritesFlushed();
    stallEventLoop(500);
    const second = other
      .get(LockService)
      .run(name, ({ signal }) => witness.inside('next owner', name, signal, () => undefined), { waitTime: 5_000 })
      .catch((error: unknown) => error);
    await Promise.all([first, second]);
    expect(witness.violations()).toEqual([]);
  });
});
