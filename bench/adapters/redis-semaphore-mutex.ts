import Redis from 'ioredis';
import { Mutex, TimeoutError } from 'redis-semaphore';
import type { LockAdapter } from './adapter';

/**
 * `redis-semaphore` `Mutex` at its defaults (SET NX PX polled every 10 ms, 10 s lock and acquire
 * timeouts, auto-refresh), one `Mutex` per acquisition as its README shows.
 */
export async function createRedisSemaphoreAdapter(redisUrl: string): Promise<LockAdapter> {
  const client = new Redis(redisUrl);
  await client.ping();
  return {
    async run(key, fn) {
      const mutex = new Mutex(client, key);
      await mutex.acquire();
      try {
        return await fn();
      } finally {
        await mutex.release();
      }
    },
    gaveUp: (error) => error instanceof TimeoutError,
    close: async () => {
      await client.quit();
    },
  };
}
