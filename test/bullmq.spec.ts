import { Queue } from 'bullmq';
import type { ChildProcess } from 'node:child_process';
import { completion, printed, spawnFixture } from './support/child-process';
import { waitUntil } from './support/lock-app';
import { startRedis, type TestRedis } from './support/redis-server';

describe('@nestjs/bullmq: a processor locked per entity id, two worker processes', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    redis = await startRedis();
  });

  afterAll(async () => {
    await redis?.stop();
  });

  it('never runs two jobs of one id at once, runs jobs of different ids in parallel', async () => {
    const queueName = 'entities';
    const prefix = 'consumers';
    const workers: ChildProcess[] = [0, 1].map(() => spawnFixture('bullmq-worker', [redis.url, queueName, prefix]));
    const exits = workers.map((worker) => completion(worker));
    const { hostname, port } = new URL(redis.url);
    const queue = new Queue(queueName, { connection: { host: hostname, port: Number(port) } });
    try {
      await Promise.all(workers.map((worker) => printed(worker, 'ready')));
      const ids = ['a', 'b', 'c', 'd'];
      const jobs = ids.flatMap((id) => [1, 2, 3, 4].map((n) => ({ name: `${id}-${n}`, data: { id } })));
      await queue.addBulk(jobs);
      await waitUntil(async () => (await queue.getJobCounts('completed')).completed === jobs.length, 60_000, 50);
      expect(await queue.getJobCounts('failed')).toEqual({ failed: 0 });
      const raw = redis.client();
      try {
        expect(Number(await raw.get(`${prefix}:overlaps`))).toBe(0);
        // Jobs of different ids ran at the same time (the lock is per id, not per queue).
        expect(Number(await raw.get(`${prefix}:max-active`))).toBeGreaterThanOrEqual(2);
      } finally {
        raw.disconnect();
      }
      // Both processes took jobs: the exclusion held across processes, not only within one.
      const pids = new Set((await queue.getJobs(['completed'])).map((job) => job.returnvalue as number));
      expect(pids).toEqual(new Set(workers.map((worker) => worker.pid)));
      for (const worker of workers) worker.kill('SIGINT');
      await Promise.all(exits);
    } finally {
      await queue.close();
      for (const worker of workers) if (worker.exitCode === null) worker.kill('SIGKILL');
    }
  }, 120_000);
});
