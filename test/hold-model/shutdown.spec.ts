import type { TestingModule } from '@nestjs/testing';
import { LockService, LockShutdownError, type LockModuleOptions } from '../../lib';
import { HoldWitness, type Visit } from '../support/hold-witness';
import { createLockApp, sleep } from '../support/lock-app';
import { RestartableRedis } from '../support/restartable-redis';
import { waitFor } from '../support/wait-for';

const BODY_MS = 1_500;

/**
 * Shutdown of a replica while a body runs (a rolling deploy catching a long job): the body's signal
 * aborts first with `LockShutdownError`, the module waits for the body up to `shutdownTimeout`, and
 * only then releases; so the next replica never starts the same job while the first one runs
 * unaware. `app.close()` stays bounded by `shutdownTimeout` plus one `commandTimeout`.
 */
describe('hold model: shutdown while a body runs', () => {
  let redis: RestartableRedis;
  const apps: TestingModule[] = [];
  let seq = 0;
  const fresh = () => `job-${++seq}`;
  const app = async (options: Partial<LockModuleOptions> = {}) => {
    const made = await createLockApp({ redis: redis.url, ...options });
    apps.push(made);
    return made;
  };

  beforeAll(async () => {
    redis = await RestartableRedis.start();
  });
  afterEach(async () => {
    redis.resume();
    // A second close of an app the test closed already is harmless.
    await Promise.all(apps.splice(0).map((made) => made.close().catch(() => undefined)));
  });
  afterAll(async () => {
    await redis?.dispose();
  });

  /** Starts a `BODY_MS` job on `replica` as one visit of `witness`; resolves once the body runs. */
  async function startJob(replica: TestingModule, name: string, witness: HoldWitness, who: string, bodyMs = BODY_MS) {
    let visit: Visit | undefined;
    const running = replica
      .get(LockService)
      .run(name, ({ signal }) => witness.inside(who, name, signal, async (v) => {
        visit = v;
        await sleep(bodyMs);
      }))
      .catch((error: unknown) => error);
    await waitFor(() => visit !== undefined, { what: `${who}'s body to start` });
    return { visit: visit!, running };
  }

  it('app.close() 100 ms into a 1.5 s body: another replica does not enter while the body runs unaware', async () => {
    const witness = new HoldWitness();
    const name = fresh();
    const first = await app();
    const second = await app();
    const job = await startJob(first, name, witness, 'first replica');
    const waiting = second
      .get(LockService)
      .run(name, ({ signal }) => witness.inside('second replica', name, signal, () => undefined), { waitTime: 15_000 })
      .catch((error: unknown) => error);
    await sleep(100);
    await first.close();
    await Promise.all([job.running, waiting]);
    expect(witness.violations()).toEqual([]);
  });

  it('app.close() aborts the running body\'s signal with LockShutdownError before it releases', async () => {
    const witness = new HoldWitness();
    const name = fresh();
    const first = await app();
    const job = await startJob(first, name, witness, 'first replica');
    const closing = first.close();
    await waitFor(() => job.visit.abortedAt !== undefined || job.visit.exitedAt !== undefined, { what: 'the body to be told or to end' });
    expect(job.visit.abortReason).toBeInstanceOf(LockShutdownError);
    // Told at once, not when the body ended by itself.
    expect(job.visit.abortedAt! - job.visit.enteredAt).toBeLessThan(BODY_MS - 500);
    await closing;
    await job.running;
  });

  it('app.close() waits for a running body (within shutdownTimeout), then releases the lock', async () => {
    const witness = new HoldWitness();
    const name = fresh();
    const first = await app({ shutdownTimeout: 10_000 } as Partial<LockModuleOptions>);
    const job = await startJob(first, name, witness, 'first replica');
    await first.close();
    const closedAt = witness.now();
    // The body finished before close() resolved, and its lock was released by then.
    expect(job.visit.exitedAt).toBeDefined();
    expect(job.visit.exitedAt!).toBeLessThanOrEqual(closedAt);
    const raw = redis.client();
    expect(await raw.exists(`lock:{${name}}`)).toBe(0);
    await job.running;
  });

  it('app.close() is bounded by shutdownTimeout plus commandTimeout, even with a body that ignores its signal and a frozen Redis', async () => {
    const witness = new HoldWitness();
    const name = fresh();
    const shutdownTimeout = 1_000;
    const commandTimeout = 500;
    const first = await app({ shutdownTimeout, commandTimeout } as Partial<LockModuleOptions>);
    const job = await startJob(first, name, witness, 'stubborn body', 5_000);
    const started = performance.now();
    const closing = first.close().then(() => performance.now() - started);
    // Redis freezes once the module waited for the body: its release gets no answer.
    await sleep(shutdownTimeout / 2);
    redis.pause();
    const tookMs = await closing;
    redis.resume();
    // Generous slack for a loaded machine; today's unbounded paths take far longer (or never end).
    expect(tookMs).toBeLessThan(shutdownTimeout + commandTimeout + 2_000);
    expect(tookMs).toBeGreaterThanOrEqual(shutdownTimeout - 100);
    void job.running;
  });
});
