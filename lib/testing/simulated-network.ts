import type { RedisConnectionOption } from '../lock.options';
import type { RedisClient } from '../redis/redis-client';
import { InMemoryRedis } from './in-memory-redis';
import { StandInConnection } from './stand-in-connection';

/**
 * The Redis servers one testing module can reach, all in memory: one per configured address
 * (`redis`, each of `redlock.clients`), so the same address means the same server and RedLock gets
 * independent masters. Nothing here opens a socket.
 */
export class SimulatedNetwork {
  private readonly servers = new Map<unknown, InMemoryRedis>();

  /** `replicas`: how many replicas confirm writes on every server (see `setReplicas`). */
  constructor(private replicas = 0) {}

  /** The server of `option` (a URL, ioredis options or a client instance), made on first use. */
  serverFor(option: RedisConnectionOption): InMemoryRedis {
    const address = addressOf(option);
    let server = this.servers.get(address);
    if (!server) {
      this.servers.set(address, (server = new InMemoryRedis()));
      server.replicas = this.replicas;
    }
    return server;
  }

  /** Every server made so far. */
  all(): InMemoryRedis[] {
    return [...this.servers.values()];
  }

  /** A connection to the server of `option`, owned (closed) by the engine that asked for it. */
  readonly connect = (option: RedisConnectionOption, connectionName: string): { client: RedisClient; owned: boolean } => ({
    client: new StandInConnection(this.serverFor(option), { connectionName }) as unknown as RedisClient,
    owned: true,
  });

  /** How many replicas confirm writes (`WAIT`, so `syncReplicas`) on every server, now and later. */
  setReplicas(replicas: number): void {
    this.replicas = replicas;
    for (const server of this.servers.values()) server.replicas = replicas;
  }

  setAvailable(available: boolean): void {
    for (const server of this.servers.values()) server.setAvailable(available);
  }
}

/** What identifies a server: the URL, the options' address, or the client object itself. */
function addressOf(option: RedisConnectionOption): unknown {
  if (typeof option === 'string') return option;
  const { host, port, path, db } = option as { host?: string; port?: number; path?: string; db?: number };
  if (host !== undefined || port !== undefined || path !== undefined) return `${path ?? `${host ?? '127.0.0.1'}:${port ?? 6379}`}/${db ?? 0}`;
  return option;
}
