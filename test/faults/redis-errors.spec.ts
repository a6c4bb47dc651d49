import type { TestingModule } from '@nestjs/testing';
import Redis from 'ioredis';
import { LockService, LockUnavailableError } from '../../lib';
import { RestartableRedis } from '../support/restartable-redis';
import { createFaultApp, timed } from './fault-app';

/**
 * Redis answering with an error instead of a result (out of memory, a read-only replica): a
 * `LockUnavailableError` naming the lock, with the Redis error as `cause`, never an ioredis error
 * class; and a client passed in with settings that would wait forever is bounded all the same.
 */
describe('faults: Redis answering errors, and a client that would wait forever', () => {
  let redis: RestartableRedis;
  let admin: Redis;
  let app: TestingModule;
  let locks: LockService;

  beforeAll(async () => {
    redis = await RestartableRedis.start();
    admin = redis.client();
    ({ app } = await createFaultApp({ redis: redis.url, commandTimeout: 500 }));
    locks = app.get(LockService);
  });
  afterAll(async () => {
    await app?.close();
    await redis?.dispose();
  });

  it.each([
    ['OOM (maxmemory reached, noeviction)', ['CONFIG', 'SET', 'maxmemory', '1'], ['CONFIG', 'SET', 'maxmemory', '0'], /OOM/],
    ['READONLY (the server became a replica)', ['REPLICAOF', '127.0.0.1', '1'], ['REPLICAOF', 'NO', 'ONE'], /READONLY/],
  ])('%s is a LockUnavailableError with the Redis error as cause', async (_title, breakIt, mendIt, redisError) => {
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    await admin.call(breakIt[0], ...breakIt.slice(1));
    try {
      const name = `errors-${breakIt[0]}`;
      const error = await locks.run(name, async () => 'ran', { waitTime: 200 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockUnavailableError);
      expect((error as LockUnavailableError).lockName).toBe(name);
      expect(String(((error as Error).cause as Error).message)).toMatch(redisError);
      await expect(locks.getLock(name).tryLock()).rejects.toBeInstanceOf(LockUnavailableError);
    } finally {
      await admin.call(mendIt[0], ...mendIt.slice(1));
    }
    expect(await locks.run('errors-after', async () => 'ran')).toBe('ran');
  });

  it('a client passed in that never gives up on a command (maxRetriesPerRequest: null) is bounded by commandTimeout', async () => {
    const own = new Redis(redis.url, { maxRetriesPerRequest: null });
    own.on('error', () => undefined);
    const { app: withOwnClient } = await createFaultApp({ redis: own, commandTimeout: 500 });
    try {
      redis.pause();
      const outcome = await timed(withOwnClient.get(LockService).run('own-client', async () => 'ran', { waitTime: 300 }));
      redis.resume();
      expect(outcome.error).toBeInstanceOf(LockUnavailableError);
      expect(outcome.ms).toBeLessThan(300 + 500 + 1_500);
      expect(await withOwnClient.get(LockService).run('own-client', async () => 'ran', { waitTime: 5_000 })).toBe('ran');
    } finally {
      redis.resume();
      await withOwnClient.close();
      own.disconnect();
    }
  });
});
