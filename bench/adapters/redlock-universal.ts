import Redis from 'ioredis';
import { createLock, IoredisAdapter, LockAcquisitionError, type Lock } from 'redlock-universal';
import { LEASE_MS, LockAdapter } from './adapter';

/**
 * `redlock-universal` `createLock` (single instance) at its defaults: 3 retries 100 ms apart,
 * circuit breaker on. One lock object per key, kept: each object pings Redis on its first use.
 */
export async function createRedlockUniversalAdapter(redisUrl: string): Promise<LockAdapter> {
  const client = new Redis(redisUrl);
  await client.ping();
  const adapter = new IoredisAdapter(client);
  const locks = new Map<string, Lock>();
  const lockFor = (key: string): Lock => {
    let lock = locks.get(key);
    if (!lock) locks.set(key, (lock = createLock({ adapter, key, ttl: LEASE_MS })));
    return lock;
  };
  return {
    async run(key, fn) {
      const lock = lockFor(key);
      const handle = await lock.acquire();
      try {
        return await fn();
      } finally {
        await lock.release(handle);
      }
    },
    gaveUp: (error) => error instanceof LockAcquisitionError,
    close: async () => {
      await client.quit();
    },
  };
}
