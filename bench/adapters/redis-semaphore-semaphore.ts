import Redis from 'ioredis';
import { Semaphore, TimeoutError } from 'redis-semaphore';
import type { LockAdapter } from './adapter';

/**
 * `redis-semaphore` `Semaphore` (a sorted set of holders, polled every 10 ms) at its defaults, one
 * object per acquisition as its README shows, with `permits` permits.
 */
export async function createRedisSemaphoreSemaphoreAdapter(redisUrl: string, permits: number): Promise<LockAdapter> {
  const client = new Redis(redisUrl);
  await client.ping();
  return {
    async run(key, fn) {
      const semaphore = new Semaphore(client, key, permits);
      await semaphore.acquire();
      try {
        return await fn();
      } finally {
        await semaphore.release();
      }
    },
    gaveUp: (error) => error instanceof TimeoutError,
    close: async () => {
      await client.quit();
    },
  };
}
