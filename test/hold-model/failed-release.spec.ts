import type { TestingModule } from '@nestjs/testing';
import { LockService } from '../../lib';
import { HoldWitness } from '../support/hold-witness';
import { createLockApp, releasesSettled, sleep } from '../support/lock-app';
import { RestartableRedis } from '../support/restartable-redis';

const WATCHDOG = 1_500; // renewed every 500 ms
const COMMAND_TIMEOUT = 300;

/**
 * A release that failed (Redis did not answer in time) must leave the holds that remain as they
 * were: an outer `run` whose inner re-entry could not release keeps its hold renewed, so no other
 * owner enters while the outer body runs with a live signal.
 */
describe('hold model: a failed inner release keeps the outer hold', () => {
  let redis: RestartableRedis;
  let app: TestingModule;
  let other: TestingModule;

  beforeAll(async () => {
    redis = await RestartableRedis.start();
    const options = { redis: redis.url, watchdogTimeout: WATCHDOG, commandTimeout: COMMAND_TIMEOUT };
    app = await createLockApp(options);
    other = await createLockApp(options);
  });
  afterAll(async () => {
    redis?.resume();
    await app?.close();
    await other?.close();
    await redis?.dispose();
  });

  it('Redis stalls past commandTimeout during the inner unlock: the outer hold is still renewed and nobody else enters', async () => {
    const witness = new HoldWitness();
    const name = 'ledger';
    let otherRun: Promise<unknown> | undefined;
    await app.get(LockService).run(name, async ({ signal }) => {
      await witness.inside('outer', name, signal, async () => {
        await app.get(LockService).run(name, async () => {
          // Frozen as the inner body returns: its release is sent into a Redis that answers nothing.
          redis.pause();
        });
        // Longer than commandTimeout, shorter than the lease: the release times out, the hold does not.
        await sleep(COMMAND_TIMEOUT * 2);
        redis.resume();
        // Another instance waits for the lock for longer than two leases.
        otherRun = other
          .get(LockService)
          .run(name, ({ signal: theirs }) => witness.inside('other', name, theirs, () => undefined), { waitTime: WATCHDOG * 4 })
          .catch((error: unknown) => error);
        await sleep(WATCHDOG * 2);
      });
    });
    await otherRun;
    await releasesSettled(app);
    expect(witness.violations()).toEqual([]);
  });
});
