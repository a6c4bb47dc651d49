import { ExecutionError, Redlock, Settings } from '@sesamecare-oss/redlock';
import Redis from 'ioredis';
import { LEASE_MS, LockAdapter } from './adapter';

/**
 * `@sesamecare-oss/redlock` (the maintained node-redlock) on one Redis: `acquire` / `release`, with
 * the given settings (none: the library's defaults, 10 retries 200 ms +- 200 ms apart).
 */
export async function createSesameRedlockAdapter(redisUrl: string, settings?: Settings): Promise<LockAdapter> {
  const client = new Redis(redisUrl);
  const redlock = new Redlock([client], settings);
  // Redlock emits every failed attempt as an 'error' event; unhandled, that would crash the process.
  redlock.on('error', () => undefined);
  await client.ping();
  return {
    async run(key, fn) {
      const lock = await redlock.acquire([key], LEASE_MS);
      try {
        return await fn();
      } finally {
        await lock.release();
      }
    },
    gaveUp: (error) => error instanceof ExecutionError,
    close: () => redlock.quit(),
  };
}
