import type { INestApplication } from '@nestjs/common';
import type Redis from 'ioredis';
import { LockService } from '../../lib';
import type { BoardSnapshot } from '../../lib/board';
import { startRedis, type TestRedis } from '../support/redis-server';
import { AUTH, startBoardApp } from './board-app';

/**
 * One lock with a very long line (docs/lock-board.md#cost): the refresh budget counts script calls,
 * so each call must stay small whatever the line holds. The board lists the first 50 waiters of a
 * line with `waiterCount` (BOARD_WAITERS_PER_LOCK), so a refresh runs no Redis command near Redis's
 * own slow-log threshold (10 ms) and the snapshot every viewer downloads stays small. (Before, with
 * the whole line read and sent: a 50 to 65 ms script and a 466 KB snapshot per refresh.)
 */
describe('lock board: a lock with a 20,000-entry line', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    ({ app, url } = await startBoardApp('express', { redis: redis.url }, { refreshMs: 250 }));
  });
  afterAll(async () => {
    await raw?.config('SET', 'slowlog-log-slower-than', '10000');
    await app?.close();
    await redis?.stop();
  });

  it('one refresh runs no Redis command slower than 10 ms; the snapshot lists 50 waiters and says 20,000 wait', async () => {
    const lock = app.get(LockService).getLock('big');
    await lock.lock({ leaseTime: 120_000 });
    // A line of 20,000 live waiters from 50 instances, as reentrant-acquire.lua writes entries.
    const pipeline = raw.pipeline();
    const far = Date.now() + 3_600_000;
    for (let i = 0; i < 20_000; i++) {
      const entry = `c${i % 50}:${i} r${i} 30000 p`;
      pipeline.rpush('lock:{big}:line', entry);
      pipeline.zadd('lock:{big}:deadlines', far, entry);
    }
    await pipeline.exec();
    // Past the reading cached before the line was written.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await raw.config('SET', 'slowlog-log-slower-than', '10000');
    await raw.slowlog('RESET');
    const response = await fetch(`${url}/api/lock-board/api/snapshot`, { headers: AUTH });
    const body = await response.text();
    const slow = ((await raw.slowlog('GET', 10)) as Array<[number, number, number, string[]]>).map(([, , micros, args]) => `${args[0]} ${micros} us`);
    await lock.forceUnlock();
    expect(slow).toEqual([]);
    expect(body.length).toBeLessThan(20_000);
    const big = (JSON.parse(body) as BoardSnapshot).locks.find((info) => info.name === 'big')!;
    expect(big.waiters).toHaveLength(50);
    expect(big.waiterCount).toBe(20_000);
  }, 30_000);
});
