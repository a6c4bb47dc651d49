import Redis, { Cluster, RedisOptions } from 'ioredis';
import { isRedisClient, RedisConnectionOption } from '../lock.options';
import { describeStartupNodes, isCluster, type RedisClient } from '../redis/redis-client';

/**
 * Opens a connection for a URL or options (lazily: nothing connects before the first command);
 * `defaults` apply unless the options say otherwise.
 */
export function connectionFor(
  option: RedisConnectionOption,
  connectionName: string,
  defaults: RedisOptions = {},
): { client: RedisClient; owned: boolean } {
  if (isRedisClient(option)) return { client: option, owned: false };
  if (typeof option === 'string') return { client: new Redis(option, { ...defaults, lazyConnect: true, connectionName }), owned: true };
  return { client: new Redis({ ...defaults, connectionName, ...option, lazyConnect: true }), owned: true };
}

/**
 * How often a cluster subscriber re-reads the slot map when nothing prompted it: a slot that moved
 * without any error seen here is followed within this time (waits stay bounded by the TTL anyway).
 */
const SUBSCRIBER_SLOTS_REFRESH_MS = 5_000;

/** The subscriber connection of `client`: its own duplicate, of the kind the pub/sub mode needs. */
export function duplicateForSubscriber(client: RedisClient, sharded: boolean): RedisClient {
  if (client instanceof Cluster && !sharded) {
    // Classic pub/sub on a cluster (the Redisson layout when Java does not shard): PUBLISH reaches
    // every node, so one subscriber connection hears it.
    return client.duplicate(undefined, { lazyConnect: true });
  }
  if (client instanceof Cluster) {
    // shardedSubscribers: one subscriber per master, SSUBSCRIBE sent to the slot's owner and
    // re-sent when the slot map changes. Without it ioredis sends every SSUBSCRIBE to one node,
    // and those for other shards never complete.
    return client.duplicate(undefined, {
      lazyConnect: true,
      shardedSubscribers: true,
      slotsRefreshInterval: client.options.slotsRefreshInterval ?? SUBSCRIBER_SLOTS_REFRESH_MS,
    });
  }
  return client.duplicate({ lazyConnect: true, connectionName: 'lock-subscriber' });
}

/** `host:port` of a standalone client, the sentinels' or the startup nodes' addresses otherwise. */
export function describeAddress(client: RedisClient): string {
  const hostPort = (node: { host?: string; port?: number }, port: number): string => `${node.host ?? '127.0.0.1'}:${node.port ?? port}`;
  if (isCluster(client)) return `cluster ${describeStartupNodes(client)}`;
  const { host, port, path, sentinels, name } = client.options;
  if (sentinels?.length) return `sentinels ${sentinels.map((s) => hostPort(s, 26379)).join(', ')} (master ${name})`;
  return path || hostPort({ host, port }, 6379);
}
