import { describeHostileNames } from './support/hostile-names';
import { describeOnCluster, startRedisCluster } from './support/redis-cluster';

// One name, one lock (docs/architecture.md#keys), on a Redis Cluster of 3 masters: every hostile
// name's keys stay in one slot and reach no other lock on any shard.
describeOnCluster('Redis Cluster (3 masters)', () => {
  describeHostileNames('cluster', async () => {
    const cluster = await startRedisCluster(3);
    return { options: () => ({ redis: cluster.cluster(), watchdogTimeout: 3_000 }), stop: () => cluster.stop() };
  });
});
