import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService } from '../../lib';
import { printed, spawnFixture } from '../support/child-process';
import { createLockApp, sleep } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

const BODY_MS = 1_500;

/**
 * A rolling deploy across processes: a replica gets SIGTERM while its job runs; the next replica,
 * already waiting for the same lock, must not start the job while the first one's body still runs
 * unaware. The job is a non-atomic GET / pause / SET+1, so a second body inside shows as a lost
 * update (or a body cut off before its SET).
 */
describe('hold model: a replica shut down mid-job (child process)', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('SIGTERM 100 ms into a 1.5 s job: the waiting replica runs the job after it, no update lost', async () => {
    const name = 'nightly-settlement';
    const first = spawnFixture('deploying-replica', [redis.url, name, String(BODY_MS)]);
    const exited = new Promise<number | null>((resolve) => first.once('exit', (code) => resolve(code)));
    let firstOut = '';
    first.stdout?.on('data', (d: Buffer) => (firstOut += d));
    try {
      await printed(first, 'entered');
      const counterKey = `counter:${name}`;
      // The next replica is already waiting for the job's lock.
      const second = app.get(LockService).run(
        name,
        async () => {
          const value = Number((await raw.get(counterKey)) ?? 0);
          await raw.set(counterKey, value + 1);
        },
        { waitTime: 15_000 },
      );
      await sleep(100);
      first.kill('SIGTERM');
      await Promise.all([second, exited]);
      // Both jobs ran one after the other: neither update was lost, none was cut off.
      expect({ counter: Number(await raw.get(counterKey)), first: firstOut.trim().split('\n') }).toEqual({
        counter: 2,
        first: ['entered', 'signal LockShutdownError'],
      });
    } finally {
      first.kill('SIGKILL');
    }
  });
});
