import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Redis, { RedisOptions } from 'ioredis';
import { freePortPair, RedisProcess, removeScratch, scratchDir, spawnRedis } from './redis-process';

export const SENTINEL_MASTER_NAME = 'lockmaster';

/** A primary, one replica and three sentinels watching them, with a fast failover. */
export interface TestRedisSentinel {
  readonly masterName: string;
  readonly sentinels: ReadonlyArray<{ host: string; port: number }>;
  /** The data servers: [0] started as primary, [1] as its replica. */
  readonly servers: readonly RedisProcess[];
  /** ioredis options that reach the current primary through the sentinels. */
  options(extra?: RedisOptions): RedisOptions;
  /** The data server the sentinels currently name as primary. */
  primary(): Promise<RedisProcess>;
  /** Waits until the sentinels name a primary other than `old` and it accepts writes. */
  waitForFailover(old: RedisProcess, timeoutMs?: number): Promise<RedisProcess>;
  /** Waits until `replica` has applied every write the primary has made so far. */
  waitForReplica(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** Short timeouts so a failover takes a second or two, not the production 30 s + 3 min. */
const DOWN_AFTER_MS = 500;
const FAILOVER_TIMEOUT_MS = 2_000;

function sentinelConfig(masterPort: number): string {
  return [
    `sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${masterPort} 2`,
    `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} ${DOWN_AFTER_MS}`,
    `sentinel failover-timeout ${SENTINEL_MASTER_NAME} ${FAILOVER_TIMEOUT_MS}`,
    `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 1`,
    '',
  ].join('\n');
}

/**
 * Starts a primary, a replica (`replica-read-only no`, so a test can make the replica miss a write
 * the way an asynchronous replica does when the primary dies before sending it) and 3 sentinels,
 * from the `redis-server` binary (`--sentinel` mode: the same program as `redis-sentinel`).
 * Start it once per suite.
 */
export async function startRedisSentinel(): Promise<TestRedisSentinel> {
  const dir = scratchDir('lock-sentinel');
  const started: RedisProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(started.map((p) => p.stop()));
    removeScratch(dir);
  };
  try {
    const primaryPort = await freePortPair();
    const replicaPort = await freePortPair();
    const primary = await spawnRedis(primaryPort, [], dir);
    started.push(primary);
    const replica = await spawnRedis(replicaPort, ['--replicaof', '127.0.0.1', String(primaryPort), '--replica-read-only', 'no'], dir);
    started.push(replica);
    const servers = [primary, replica];
    const sentinelPorts = await Promise.all([0, 1, 2].map(() => freePortPair()));
    const sentinels = await Promise.all(
      sentinelPorts.map((port) => {
        const file = join(dir, `sentinel-${port}.conf`);
        writeFileSync(file, sentinelConfig(primaryPort));
        return spawnRedis(port, [], dir, file);
      }),
    );
    started.push(...sentinels);
    const sentinelAddresses = sentinels.map((s) => ({ host: s.host, port: s.port }));

    const ask = async (): Promise<RedisProcess | undefined> => {
      const client = new Redis(sentinels[0].port, '127.0.0.1', { maxRetriesPerRequest: 1 });
      client.on('error', () => undefined);
      try {
        const [, port] = (await client.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER_NAME)) as [string, string];
        return servers.find((s) => s.port === Number(port));
      } finally {
        client.disconnect();
      }
    };
    const role = async (server: RedisProcess): Promise<string | undefined> => {
      const client = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => null });
      client.on('error', () => undefined);
      try {
        return ((await client.call('ROLE')) as [string])[0];
      } catch {
        return undefined;
      } finally {
        client.disconnect();
      }
    };
    const waitFor = async (what: string, condition: () => Promise<boolean>, timeoutMs: number): Promise<void> => {
      const deadline = Date.now() + timeoutMs;
      while (!(await condition())) {
        if (Date.now() > deadline) throw new Error(`sentinel topology: ${what} not reached within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };

    // Ready when the replica is in sync and every sentinel knows the replica and the other sentinels.
    const probes = sentinels.map((s) => {
      const c = new Redis(s.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
      c.on('error', () => undefined);
      return c;
    });
    const replicaProbe = replica.client();
    try {
      await waitFor(
        'replica link up and sentinels acquainted',
        async () => {
          const info = await replicaProbe.info('replication');
          if (!info.includes('master_link_status:up')) return false;
          const views = await Promise.all(
            probes.map((p) => p.call('SENTINEL', 'MASTER', SENTINEL_MASTER_NAME) as Promise<string[]>),
          );
          return views.every((flat) => {
            const fields = new Map<string, string>();
            for (let i = 0; i + 1 < flat.length; i += 2) fields.set(flat[i], flat[i + 1]);
            return fields.get('num-slaves') === '1' && fields.get('num-other-sentinels') === '2';
          });
        },
        20_000,
      );
    } finally {
      for (const p of probes) p.disconnect();
      replicaProbe.disconnect();
    }

    return {
      masterName: SENTINEL_MASTER_NAME,
      sentinels: sentinelAddresses,
      servers,
      options(extra = {}) {
        return { sentinels: sentinelAddresses.map((a) => ({ ...a })), name: SENTINEL_MASTER_NAME, ...extra };
      },
      async primary() {
        const current = await ask();
        if (!current) throw new Error('the sentinels name no known primary');
        return current;
      },
      async waitForFailover(old, timeoutMs = 20_000) {
        let promoted: RedisProcess | undefined;
        await waitFor(
          'failover',
          async () => {
            promoted = await ask();
            return promoted !== undefined && promoted !== old && (await role(promoted)) === 'master';
          },
          timeoutMs,
        );
        return promoted!;
      },
      async waitForReplica(timeoutMs = 5_000) {
        const current = await ask();
        const other = servers.find((s) => s !== current);
        if (!current || !other) throw new Error('the sentinels name no known primary');
        const offset = (info: string, field: string): number => Number(new RegExp(`${field}:(\\d+)`).exec(info)?.[1] ?? -1);
        const primaryClient = current.client();
        const replicaClient = other.client();
        try {
          const target = offset(await primaryClient.info('replication'), 'master_repl_offset');
          await waitFor(
            'replica caught up',
            async () => offset(await replicaClient.info('replication'), 'slave_repl_offset') >= target,
            timeoutMs,
          );
        } finally {
          primaryClient.disconnect();
          replicaClient.disconnect();
        }
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
