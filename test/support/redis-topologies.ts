import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import Redis from 'ioredis';
import { redisServerBin } from './redis-binaries';
import { freePortPair, type RedisProcess, removeScratch, scratchDir, spawnRedis } from './redis-process';
import { waitFor } from './wait-for';

/** A primary and one replica of it (no sentinel): enough for `syncReplicas`' WAIT to have someone to wait for. */
export interface PrimaryWithReplica {
  readonly primary: RedisProcess;
  readonly replica: RedisProcess;
  stop(): Promise<void>;
}

export async function startPrimaryWithReplica(): Promise<PrimaryWithReplica> {
  const dir = scratchDir('lock-replica');
  const primary = await spawnRedis(await freePortPair(), [], dir);
  const replica = await spawnRedis(await freePortPair(), ['--replicaof', '127.0.0.1', String(primary.port)], dir);
  const stop = async (): Promise<void> => {
    await Promise.all([primary.stop(), replica.stop()]);
    removeScratch(dir);
  };
  const probe = replica.client();
  try {
    await waitFor(async () => (await probe.info('replication')).includes('master_link_status:up'), { what: 'the replica to sync', timeoutMs: 20_000 });
  } catch (error) {
    await stop();
    throw error;
  } finally {
    probe.disconnect();
  }
  return { primary, replica, stop };
}

function version(bin: string): [number, number] | undefined {
  const match = /v=(\d+)\.(\d+)\./.exec(spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout ?? '');
  return match ? [Number(match[1]), Number(match[2])] : undefined;
}

/**
 * A Redis that evicts EVAL-loaded scripts beyond 500 (Redis 7.4+): the suite's server when it is
 * one, else the prebuilt 7.4 from the `shared/servers` folder beside the repository. Undefined
 * when neither is there.
 */
export function scriptEvictingServerBin(): string | undefined {
  const candidates = [redisServerBin(), join(__dirname, '..', '..', '..', 'shared', 'servers', 'redis-7.4.1', 'redis-server')];
  for (const bin of candidates) {
    if (bin.includes('/') && !existsSync(bin)) continue;
    const v = version(bin);
    if (v && v[0] === 7 ? v[1] >= 4 : v && v[0] > 7) return bin;
  }
  return undefined;
}

/** Starts `bin` on a free port; `stop()` kills it and removes its folder. */
export async function startServerBinary(bin: string): Promise<RedisProcess & { dispose(): Promise<void> }> {
  const dir = scratchDir('lock-server');
  const server = await spawnRedis(await freePortPair(), [], dir, undefined, bin);
  return Object.assign(server, {
    async dispose() {
      await server.stop();
      removeScratch(dir);
    },
  });
}

/** Runs `count` distinct one-line scripts with EVAL: on Redis 7.4+ that evicts every older EVAL-loaded script. */
export async function evictEvalScripts(raw: Redis, count = 600): Promise<void> {
  const pipeline = raw.pipeline();
  for (let i = 0; i < count; i++) pipeline.eval(`return ${i}`, 0);
  await pipeline.exec();
}
