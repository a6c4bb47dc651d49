import { ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import Redis from 'ioredis';
import { pinned, REDIS_CORE } from './cpu';
import { sleep } from './clock';

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

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A connection the bench uses for setup and measurement; named so CLIENT LIST counts can skip it. */
export function adminClient(url: string): Redis {
  const client = new Redis(url, { connectionName: 'bench-admin', maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  return client;
}

async function waitForPing(url: string, child: ChildProcess | undefined): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child && child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode}`);
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      if ((await probe.ping()) === 'PONG') return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`Redis at ${url} did not answer: ${String(error)}`);
    } finally {
      probe.disconnect();
    }
    await sleep(50);
  }
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
    await waitForPing(external, undefined);
    const { hostname, port } = new URL(external);
    return { url: external, host: hostname, port: Number(port || 6379), owned: false, version: await serverVersion(external), stop: async () => undefined };
  }
  const port = await freePort();
  const [command, args] = pinned(REDIS_CORE, 'redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--maxclients', '4000',
  ]);
  const child = spawn(command, args, { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `redis://127.0.0.1:${port}`;
  try {
    await waitForPing(url, child);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return {
    url,
    host: '127.0.0.1',
    port,
    owned: true,
    version: await serverVersion(url),
    async stop() {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
