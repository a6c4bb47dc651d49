import { Redisson } from 'node-redisson';
import { LockAdapter, WAIT_MS } from './adapter';

class RedissonGaveUp extends Error {}

/**
 * `node-redisson` (the Node port of Redisson: hash + pub/sub waiting + watchdog) at its defaults
 * (pub/sub events, 30 s watchdog), one lock object (owner) per acquisition. `lock()` would wait
 * without limit; the bench uses `tryLock(5000 ms, watchdog)` like our `defaultWaitTime`.
 */
export async function createNodeRedissonAdapter(redisUrl: string): Promise<LockAdapter> {
  const { hostname, port } = new URL(redisUrl);
  const redisson = new Redisson({ redis: { options: { host: hostname, port: Number(port) } } });
  await redisson.redis.ping();
  return {
    async run(key, fn) {
      const lock = redisson.getLock(key);
      if (!(await lock.tryLock(WAIT_MS, true))) throw new RedissonGaveUp(key);
      try {
        return await fn();
      } finally {
        await lock.unlock();
      }
    },
    gaveUp: (error) => error instanceof RedissonGaveUp,
    close: () => redisson.quit(),
  };
}
