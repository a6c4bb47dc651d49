import calculateSlot from 'cluster-key-slot';
import { Cluster, ClusterOptions } from 'ioredis';
import { clusterUnsupportedReason } from './redis-binaries';
import { freePortPair, RedisProcess, removeScratch, scratchDir, spawnRedis } from './redis-process';
import { deadline } from './wait-for';

/**
 * `describe` for a suite on a Redis Cluster: skipped where the server under test cannot run the
 * library's cluster mode (Redis 6.2 has no sharded pub/sub), with the reason in the suite's title.
 */
export function describeOnCluster(name: string, suite: () => void): void {
  const reason = clusterUnsupportedReason();
  if (!reason) return describe(name, suite);
  process.stderr.write(`${name}: ${reason}\n`);
  describe.skip(`${name} [${reason}]`, suite);
}

/** A Redis Cluster of masters only, each owning an equal share of the 16384 slots. */
export interface TestRedisCluster {
  readonly masters: readonly RedisProcess[];
  readonly startupNodes: ReadonlyArray<{ host: string; port: number }>;
  /** A new ioredis Cluster client; `stop()` disconnects the ones made here. */
  cluster(options?: ClusterOptions): Cluster;
  /** The master that owns `key`'s slot right now. */
  masterOf(key: string): Promise<RedisProcess>;
  /**
   * Moves `key`'s slot (and its keys) to `target`, the way `redis-cli --cluster reshard` does:
   * IMPORTING / MIGRATING, MIGRATE, then SETSLOT NODE on every master.
   */
  moveSlot(key: string, target: RedisProcess): Promise<void>;
  stop(): Promise<void>;
}

const SLOTS = 16_384;
const CLUSTER_BUS_OFFSET = 10_000;

async function nodeId(node: RedisProcess): Promise<string> {
  const client = node.client();
  try {
    return (await client.call('CLUSTER', 'MYID')) as string;
  } finally {
    client.disconnect();
  }
}

/** Every master agrees the cluster is ok and knows every slot's owner. */
async function waitForConsensus(masters: readonly RedisProcess[], deadlineMs = 20_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  const clients = masters.map((m) => m.client());
  try {
    for (;;) {
      const infos = await Promise.all(clients.map((c) => c.call('CLUSTER', 'INFO') as Promise<string>));
      const ok = infos.every(
        (info) =>
          info.includes('cluster_state:ok') &&
          info.includes(`cluster_known_nodes:${masters.length}`) &&
          info.includes(`cluster_slots_ok:${SLOTS}`),
      );
      if (ok) return;
      if (Date.now() > deadline) throw new Error(`cluster did not converge: ${infos.join(' | ')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    for (const c of clients) c.disconnect();
  }
}

/**
 * Starts `masterCount` cluster-enabled `redis-server` processes on free loopback ports and joins
 * them (slots assigned with ADDSLOTS, nodes introduced with MEET): no replicas, so a test
 * can reason about exactly which process holds which key. Start it once per suite.
 */
export async function startRedisCluster(masterCount = 3): Promise<TestRedisCluster> {
  const dir = scratchDir('lock-cluster');
  const ports = await Promise.all(Array.from({ length: masterCount }, () => freePortPair(CLUSTER_BUS_OFFSET)));
  const masters = await Promise.all(
    ports.map((port) =>
      spawnRedis(
        port,
        [
          '--cluster-enabled', 'yes',
          '--cluster-config-file', `nodes-${port}.conf`,
          '--cluster-node-timeout', '2000',
          '--cluster-require-full-coverage', 'yes',
        ],
        dir,
      ),
    ),
  );
  const made: Cluster[] = [];
  const stop = async (): Promise<void> => {
    for (const client of made.splice(0)) client.disconnect();
    await Promise.all(masters.map((m) => m.stop()));
    removeScratch(dir);
  };
  try {
    const admins = masters.map((m) => m.client());
    const share = Math.floor(SLOTS / masterCount);
    await Promise.all(
      admins.map(async (admin, i) => {
        await admin.call('CLUSTER', 'SET-CONFIG-EPOCH', String(i + 1));
        const first = i * share;
        const last = i === masterCount - 1 ? SLOTS - 1 : first + share - 1;
        // ADDSLOTS rather than ADDSLOTSRANGE (Redis 7.0+), so a Redis 6.2 cluster starts too.
        await admin.call('CLUSTER', 'ADDSLOTS', ...Array.from({ length: last - first + 1 }, (_, k) => String(first + k)));
      }),
    );
    for (const master of masters.slice(1)) await admins[0].call('CLUSTER', 'MEET', '127.0.0.1', String(master.port));
    for (const admin of admins) admin.disconnect();
    await waitForConsensus(masters);
  } catch (error) {
    await stop();
    throw error;
  }

  const ids = await Promise.all(masters.map(nodeId));
  const startupNodes = masters.map((m) => ({ host: m.host, port: m.port }));

  const masterOf = async (key: string): Promise<RedisProcess> => {
    const slot = calculateSlot(key);
    const client = masters[0].client();
    try {
      const ranges = (await client.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, string]]>;
      const range = ranges.find(([from, to]) => slot >= from && slot <= to);
      const owner = masters.find((m) => m.port === range?.[2][1]);
      if (!owner) throw new Error(`no master owns slot ${slot}`);
      return owner;
    } finally {
      client.disconnect();
    }
  };

  return {
    masters,
    startupNodes,
    cluster(options: ClusterOptions = {}) {
      const client = new Cluster(startupNodes.map((n) => ({ ...n })), options);
      client.on('error', () => undefined);
      made.push(client);
      return client;
    },
    masterOf,
    async moveSlot(key, target) {
      const slot = String(calculateSlot(key));
      const source = await masterOf(key);
      if (source === target) return;
      const sourceId = ids[masters.indexOf(source)];
      const targetId = ids[masters.indexOf(target)];
      const from = source.client();
      const to = target.client();
      try {
        await to.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', sourceId);
        await from.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', targetId);
        const overdue = deadline(20_000, `slot ${slot}'s keys to move`);
        for (;;) {
          overdue();
          const keys = (await from.call('CLUSTER', 'GETKEYSINSLOT', slot, '100')) as string[];
          if (keys.length === 0) break;
          await from.call('MIGRATE', target.host, String(target.port), '', '0', '5000', 'KEYS', ...keys);
        }
        await to.call('CLUSTER', 'SETSLOT', slot, 'NODE', targetId);
        await from.call('CLUSTER', 'SETSLOT', slot, 'NODE', targetId);
        for (const other of masters.filter((m) => m !== source && m !== target)) {
          const client = other.client();
          await client.call('CLUSTER', 'SETSLOT', slot, 'NODE', targetId);
          client.disconnect();
        }
      } finally {
        from.disconnect();
        to.disconnect();
      }
    },
    stop,
  };
}

/**
 * Names whose lock keys land on each master in turn (`perMaster` per master), so a test covers
 * every shard: returned grouped by master index.
 */
export async function namesOnEveryMaster(
  cluster: TestRedisCluster,
  base: string,
  perMaster: number,
  lockKey: (name: string) => string,
): Promise<string[][]> {
  const client = cluster.masters[0].client();
  const ranges = (await client.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, string]]>;
  client.disconnect();
  const groups: string[][] = cluster.masters.map(() => []);
  for (let i = 0; groups.some((g) => g.length < perMaster); i++) {
    const name = `${base}-${i}`;
    const slot = calculateSlot(lockKey(name));
    const port = ranges.find(([from, to]) => slot >= from && slot <= to)?.[2][1];
    const group = groups[cluster.masters.findIndex((m) => m.port === port)];
    if (group && group.length < perMaster) group.push(name);
  }
  return groups;
}

/** How many subscribers `master` has for the sharded channel `channel` (PUBSUB SHARDNUMSUB). */
export async function shardSubscribers(master: RedisProcess, channel: string): Promise<number> {
  const client = master.client();
  try {
    const [, count] = (await client.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number];
    return Number(count);
  } finally {
    client.disconnect();
  }
}
