import { completion, printed, spawnFixture } from './support/child-process';
import { createLockApp, waitUntil } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';
import { LockService } from '../lib';

describe('reentrant lock across processes', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('4 processes x 25 non-atomic increments under run() lose no update', async () => {
    const children = [1, 2, 3, 4].map(() => spawnFixture('counter-worker', [redis.url, 'reentrant', 'shared-counter', '25']));
    await Promise.all(children.map(completion));
    expect(Number(await redis.client().get('counter:reentrant:shared-counter'))).toBe(100);
  }, 90_000);

  it('a holder killed with SIGKILL frees the lock within about one watchdogTimeout', async () => {
    const watchdogTimeout = 1_000;
    const child = spawnFixture('holder', [redis.url, 'killed-holder', String(watchdogTimeout)]);
    await printed(child, 'held');
    const app = await createLockApp({ redis: redis.url });
    try {
      const lock = app.get(LockService).getLock('killed-holder');
      expect(await lock.tryLock()).toBe(false);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
      const killedAt = Date.now();
      expect(await lock.tryLock({ waitTime: watchdogTimeout * 3 })).toBe(true);
      // The lease left at the kill is at most one watchdogTimeout (renewed every third of it).
      expect(Date.now() - killedAt).toBeLessThan(watchdogTimeout * 2);
      await lock.unlock();
    } finally {
      await app.close();
    }
  }, 60_000);
});
