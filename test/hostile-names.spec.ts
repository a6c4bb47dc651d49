import { describeHostileNames } from './support/hostile-names';
import { startRedis } from './support/redis-server';

// One name, one lock (docs/architecture.md#keys), on a standalone server.
describeHostileNames('standalone', async () => {
  const redis = await startRedis();
  return { options: () => ({ redis: redis.url, watchdogTimeout: 3_000 }), stop: () => redis.stop() };
});
