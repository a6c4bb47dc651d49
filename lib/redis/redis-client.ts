import Redis, { Cluster } from 'ioredis';

/** The command connection: a standalone/Sentinel client or a cluster. */
export type RedisClient = Redis | Cluster;

export const isCluster = (client: RedisClient): client is Cluster => client instanceof Cluster;

/** A cluster's startup nodes as configured (`host:port`, the defaults filled in), comma-separated. */
export function describeStartupNodes(cluster: Cluster): string {
  const nodes = (cluster as unknown as { startupNodes?: Array<string | number | { host?: string; port?: number }> }).startupNodes ?? [];
  return nodes.map((node) => (typeof node === 'object' ? `${node.host ?? '127.0.0.1'}:${node.port ?? 6379}` : String(node))).join(', ');
}

/**
 * Between connections: ioredis would hold a command until its next reconnect attempt (or replay it
 * much later), so a caller that cannot wait that long is better told "unreachable" at once.
 */
export const isDown = (client: RedisClient): boolean =>
  client.status === 'reconnecting' || client.status === 'close' || client.status === 'end';

/** Quits a connection the library opened; falls back to a hard disconnect if QUIT hangs. */
export async function closeConnection(client: RedisClient, timeoutMs = 1000): Promise<void> {
  if (client.status === 'end') return;
  if (client.status === 'wait') {
    client.disconnect();
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      client.quit(),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
  } catch {
    // Already closing or closed: the disconnect below settles it.
  } finally {
    clearTimeout(timer);
    if ((client.status as string) !== 'end') client.disconnect();
  }
}
