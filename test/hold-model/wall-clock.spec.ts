import type { TestingModule } from '@nestjs/testing';
import { LockService } from '../../lib';
import { HoldWitness } from '../support/hold-witness';
import { createLockApp, sleep } from '../support/lock-app';
import { RestartableRedis } from '../support/restartable-redis';
import { waitFor } from '../support/wait-for';

/** Moves the wall clock (`Date.now`) by `stepMs` from now on, as NTP or an operator would; the monotonic clock does not move. */
function stepWallClock(stepMs: number): void {
  const real = Date.now;
  jest.spyOn(Date, 'now').mockImplementation(() => real() + stepMs);
}

/**
 * Timeouts and leases run on a monotonic clock: a step of the wall clock neither stretches a
 * command timeout nor ends a live, renewed hold.
 */
describe('hold model: a wall-clock step', () => {
  let redis: RestartableRedis;
  let app: TestingModule;

  beforeAll(async () => {
    redis = await RestartableRedis.start();
    app = await createLockApp({ redis: redis.url, watchdogTimeout: 900, commandTimeout: 100 });
  });
  afterEach(() => {
    jest.restoreAllMocks();
    redis.resume();
  });
  afterAll(async () => {
    await app?.close();
    await redis?.dispose();
  });

  // A backward step and a command timeout: test/wall-clock-steps.spec.ts.
  it('a 5 s forward step does not mark a live, renewed hold as lost', async () => {
    const witness = new HoldWitness();
    const name = 'clock-forward';
    let entered = false;
    const running = app.get(LockService).run(name, ({ signal }) =>
      witness.inside('holder', name, signal, async () => {
        entered = true;
        // Several watchdog rounds (one every 300 ms) after the step.
        await sleep(1_500);
      }),
    );
    await waitFor(() => entered, { what: 'the body to start' });
    stepWallClock(5_000);
    await running;
    const [visit] = witness.visits;
    expect(visit.abortReason).toBeUndefined();
  });
});
