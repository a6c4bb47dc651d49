import type Redis from 'ioredis';
import { completion, spawnFixture } from '../support/child-process';
import { RestartableRedis } from '../support/restartable-redis';
import { deadline } from '../support/wait-for';

/**
 * CLIENT KILL storms while 3 processes increment one counter under one lock: the library's
 * connections (commands and subscriber) are killed again and again; ioredis reconnects and resends.
 * No update may be lost, every task completes or fails with a lock error, and nothing is left
 * behind in Redis.
 */
describe('faults: CLIENT KILL storm during a 3-process counter run', () => {
  let redis: RestartableRedis;
  let raw: Redis;

  beforeAll(async () => {
    redis = await RestartableRedis.start();
    raw = redis.client();
  });
  afterAll(async () => {
    await redis?.dispose();
  });

  /** Kills the library's connections every `everyMs` until `stop` resolves; returns how many it killed. */
  async function storm(stop: Promise<unknown>, everyMs: number): Promise<number> {
    let done = false;
    void stop.finally(() => (done = true));
    let killed = 0;
    const overdue = deadline(120_000, 'the workers to finish under the storm');
    while (!done) {
      overdue();
      const clients = String(await raw.client('LIST'))
        .split('\n')
        .filter((line) => / name=lock-(commands|subscriber) /.test(line));
      for (const line of clients) {
        // Now the command connections, now the subscribers, now all of them.
        if (killed % 3 === 1 && line.includes('name=lock-commands')) continue;
        const id = /\bid=(\d+)/.exec(line)?.[1];
        if (id) killed += Number(await raw.client('KILL', 'ID', id));
      }
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
    return killed;
  }

  it('loses no update, ends every task with its work done or a lock error, and leaves no lock behind', async () => {
    const name = 'storm';
    const TASKS = 60;
    const workers = [1, 2, 3].map(() => completion(spawnFixture('storm-counter-worker', [redis.url, name, String(TASKS)])));
    const all = Promise.all(workers);
    const [outputs, killed] = await Promise.all([all, storm(all, 20)]);
    const results = outputs.map((out) => JSON.parse(out.trim().split('\n').pop()!) as { completed: number; failed: number });

    expect(killed).toBeGreaterThan(10); // the storm really hit the library's connections
    for (const { completed, failed } of results) expect(completed + failed).toBe(TASKS);
    const completed = results.reduce((sum, r) => sum + r.completed, 0);
    expect(completed).toBeGreaterThan(0);
    expect(Number(await raw.get(`counter:${name}`))).toBe(completed); // no lost update
    expect(await raw.exists(`lock:{${name}}`)).toBe(0);
    expect(await raw.pubsub('CHANNELS')).toEqual([]);
  }, 120_000);
});
