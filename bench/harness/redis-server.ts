import { ChildProcess, spawn } from 'node:child_process';
import Redis from 'ioredis';
import { pinned, REDIS_CORE } from './cpu';
import { freePort, waitForPing } from '../../test/support/local-redis';

/** The Redis every process of one bench run talks to. */
export interface BenchRedis {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** True when the bench started this server (and pinned it); false for REDIS_URL. */
  readonly owned: boolean;
  readonly version: string;
  stop(): Promise<void>;
}


/** A connection the bench uses for setup and measurement; named so CLIENT LIST counts can skip it. */
export function adminClient(url: string): Redis {
  const client = new Redis(url, { connectionName: 'bench-admin', maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  return client;
}


async function serverVersion(url: string): Promise<string> {
  const client = adminClient(url);
  try {
    const info = await client.info('server');
    return /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
  } finally {
    client.disconnect();
  }
}

/**
 * REDIS_URL when set (must be a loopback server the bench may flush); otherwise a fresh
 * `redis-server` on a free loopback port, without persistence, pinned to its own core.
 */
export async function startBenchRedis(): Promise<BenchRedis> {
  const external = process.env.REDIS_URL;
  if (external) {
    await waitForPing(external);
    const { hostname, port } = new URL(external);
    return { url: external, host: hostname, port: Number(port || 6379), owned: false, version: await serverVersion(external), stop: async () => undefined };
  }
  const port = await freePort();
  const [command, args] = pinned(REDIS_CORE, 'redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxclients', '4000',
  ]);
  const child = spawn(command, args, { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  // Also when the bench dies on an uncaught error (an EPIPE on a closed stderr): no orphaned server.
  process.once('exit', kill);
  const url = `redis://127.0.0.1:${port}`;
  try {
    await waitForPing(url, 10_000, () => (child.exitCode !== null ? `redis-server exited with code ${child.exitCode}` : undefined));
  } catch (error) {
    kill();
    throw error;
  }
  return {
    url,
    host: '127.0.0.1',
    port,
    owned: true,
    version: await serverVersion(url),
    async stop() {
      kill();
      await exited;
      process.removeListener('exit', kill);
    },
  };
}
