import { completion, printed, spawnFixture } from './support/child-process';
import { createLockApp } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';
import { SemaphoreService } from '../lib';

describe('semaphore across processes', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('4 processes x 8 tasks on a semaphore of 3: never more than 3 inside, and every task gets its turn', async () => {
    const name = 'xp-sem';
    const children = [1, 2, 3, 4].map(() => spawnFixture('semaphore-worker', [redis.url, name, '3', '8', '3000']));
    const outputs = await Promise.all(children.map(completion));
    const counts = outputs.flatMap((out) => JSON.parse(out.trim().split('\n').pop() as string) as number[]);
    const admin = redis.client();
    const maxInside = Number(await admin.get(`{${name}}:max-inside`));
    expect(counts).toHaveLength(32);
    expect(maxInside).toBeGreaterThan(1); // the permits were really shared
    expect(maxInside).toBeLessThanOrEqual(3);
    expect(Number(await admin.get(`{${name}}:inside`))).toBe(0);
    const fairness = Math.min(...counts) / Math.max(...counts);
    process.stdout.write(`semaphore 4x8 on 3 permits: ${counts.reduce((a, b) => a + b)} acquisitions, fairness ${fairness.toFixed(2)}, max inside ${maxInside}\n`);
    expect(Math.min(...counts)).toBeGreaterThan(0);
    expect(fairness).toBeGreaterThanOrEqual(0.5);
  }, 90_000);

  it("a holder killed with SIGKILL: its permits come back within about one lease", async () => {
    const watchdogTimeout = 1_000;
    const child = spawnFixture('semaphore-holder', [redis.url, 'xp-killed', '3', '2', String(watchdogTimeout)]);
    await printed(child, 'held');
    const app = await createLockApp({ redis: redis.url });
    try {
      const semaphore = app.get(SemaphoreService).getSemaphore('xp-killed', { permits: 3 });
      expect(await semaphore.availablePermits()).toBe(1);
      expect(await semaphore.tryAcquire({ take: 2 })).toBeNull();
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
      const killedAt = Date.now();
      // A waiter sleeps until the dead holder's lease ends, then its next attempt gets the permits.
      const permit = await semaphore.acquire({ take: 3, waitTime: watchdogTimeout * 5 });
      // The lease left at the kill is at most one watchdogTimeout (renewed every third of it).
      expect(Date.now() - killedAt).toBeLessThan(watchdogTimeout * 2);
      await permit.release();
    } finally {
      await app.close();
    }
  }, 60_000);
});
