import { isCluster, type RedisClient } from '../redis/redis-client';
import type { DeadlockEngine } from './wait-node';

/** Whether two module instances reach the same Redis deployment (records of one are read by the other's steps). */
export function sameDeployment(a: DeadlockEngine, b: DeadlockEngine): boolean {
  return a === b || a.client === b.client || (deploymentOf(a.client) !== undefined && deploymentOf(a.client) === deploymentOf(b.client));
}

/** Where a client connects, as far as its options say (undefined: unknown, only the same client counts). */
function deploymentOf(client: RedisClient): string | undefined {
  if (isCluster(client)) {
    const nodes = (client as unknown as { startupNodes?: Array<{ host?: string; port?: number } | string> }).startupNodes ?? [];
    return `cluster:${nodes.map((node) => (typeof node === 'string' ? node : `${node.host}:${node.port}`)).sort().join(',')}`;
  }
  if (!client.options) return undefined;
  const { host, port, db, path, sentinels, name } = client.options as {
    host?: string;
    port?: number;
    db?: number;
    path?: string;
    sentinels?: Array<{ host?: string; port?: number }>;
    name?: string;
  };
  if (sentinels?.length) return `sentinel:${name}:${sentinels.map((s) => `${s.host}:${s.port}`).sort().join(',')}`;
  return path ? `unix:${path}/${db ?? 0}` : `${host}:${port}/${db ?? 0}`;
}
