import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { sleep } from '../harness/clock';
import { LEASE_MS, LockAdapter } from './adapter';

/** Deletes the key only if it still holds our token (never someone else's lock after an expiry). */
const COMPARE_AND_DELETE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

const RETRY_MS = 10;
/** Like redis-semaphore's default acquire timeout. */
const GIVE_UP_MS = 10_000;

class PollerGaveUp extends Error {}

/**
 * The lock people write themselves: `SET key token NX PX lease`, retried every 10 ms, released by a
 * compare-and-delete script (EVALSHA), a random token per acquisition.
 */
export async function createSetNxPollerAdapter(redisUrl: string): Promise<LockAdapter> {
  const client = new Redis(redisUrl) as Redis & {
    compareAndDelete(key: string, token: string): Promise<number>;
  };
  client.defineCommand('compareAndDelete', { numberOfKeys: 1, lua: COMPARE_AND_DELETE });
  await client.ping();
  return {
    async run(key, fn) {
      const token = randomBytes(16).toString('hex');
      const deadline = Date.now() + GIVE_UP_MS;
      while ((await client.set(key, token, 'PX', LEASE_MS, 'NX')) !== 'OK') {
        if (Date.now() >= deadline) throw new PollerGaveUp(key);
        await sleep(RETRY_MS);
      }
      try {
        return await fn();
      } finally {
        await client.compareAndDelete(key, token);
      }
    },
    gaveUp: (error) => error instanceof PollerGaveUp,
    close: async () => {
      await client.quit();
    },
  };
}
