import type { TestingModule } from '@nestjs/testing';
import { LockService } from '../../lib';
import { createLockApp, sleep } from '../support/lock-app';
import { startPrimaryWithReplica, type PrimaryWithReplica } from '../support/redis-topologies';

/**
 * An acquisition the caller abandoned after Redis granted it gives the grant back: aborting while
 * `syncReplicas`' WAIT is still waiting for the replica tells the caller no, and nothing stays held
 * (or renewed) for an owner that was told it did not get the lock.
 */
describe('hold model: abort during the syncReplicas WAIT', () => {
  let topology: PrimaryWithReplica;
  let app: TestingModule;
  let other: TestingModule;

  beforeAll(async () => {
    topology = await startPrimaryWithReplica();
    const options = { redis: topology.primary.url, syncReplicas: 1, syncReplicasTimeout: 3_000, commandTimeout: 5_000 };
    app = await createLockApp(options);
    other = await createLockApp(options);
  });
  afterAll(async () => {
    topology?.replica.resume();
    await app?.close();
    await other?.close();
    await topology?.stop();
  });

  it('the caller is told no and the grant is given back, not renewed for ever', async () => {
    const name = 'replicated';
    const controller = new AbortController();
    // A frozen replica: the primary grants, then WAIT blocks waiting for its acknowledgement.
    topology.replica.pause();
    const asking = app
      .get(LockService)
      .getLock(name)
      .tryLock({ waitTime: 0, signal: controller.signal })
      .then(
        (acquired) => ({ acquired }),
        (error: unknown) => ({ error }),
      );
    await sleep(300);
    controller.abort(new Error('caller gave up'));
    const told = await asking;
    expect(told).toEqual({ error: controller.signal.reason });
    // The replica comes back and acknowledges: WAIT succeeds after the caller left.
    topology.replica.resume();
    // Given back, another owner gets the lock well before a 30 s watchdog lease could have run out.
    const taker = other.get(LockService).getLock(name);
    expect(await taker.tryLock({ waitTime: 6_000 })).toBe(true);
    await taker.unlock();
  });
});
