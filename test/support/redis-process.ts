import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { waitForPing as waitForUrl } from './local-redis';
import { redisServerBin, sentinelCommand } from './redis-binaries';

/**
 * One `redis-server` (or sentinel) process of a test topology, on a loopback port. Cluster and
 * Sentinel topologies always run from binaries: their members announce their own addresses to each
 * other, which a container's mapped ports would break.
 */
export interface RedisProcess {
  readonly host: string;
  readonly port: number;
  readonly url: string;
  /** A new client; `stop()` disconnects the ones made here. */
  client(): Redis;
  /** Freezes the process (SIGSTOP): it keeps its connections but answers nothing. */
  pause(): void;
  resume(): void;
  /** Kills the process (SIGKILL, like a crash) and waits for it to exit. */
  stop(): Promise<void>;
  readonly stopped: boolean;
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

const claimed = new Set<number>();

/**
 * Jest's parallel workers each draw ports from their own slice of 20000-29999 (JEST_WORKER_ID), so
 * two workers never pick the same free port at the same moment; spawnRedis checks anyway that the
 * server answering is the one it started.
 */
const PORT_SLICES = 8;
const SLICE_SIZE = 10_000 / PORT_SLICES;
// TEST_PORT_SLICE moves a whole jest run to other slices (.ci/compat runs two runs side by side).
const slice = Number(process.env.TEST_PORT_SLICE ?? 0) + Number(process.env.JEST_WORKER_ID ?? 1) - 1;
const sliceStart = 20_000 + (slice % PORT_SLICES) * SLICE_SIZE;

/**
 * A free port whose `+ busOffset` twin is free too (a cluster node also listens on port + 10000),
 * below the ephemeral range so the kernel does not hand it to an outgoing connection meanwhile.
 */
export async function freePortPair(busOffset = 0): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = sliceStart + Math.floor(Math.random() * SLICE_SIZE);
    if (claimed.has(port) || claimed.has(port + busOffset)) continue;
    if ((await portIsFree(port)) && (busOffset === 0 || (await portIsFree(port + busOffset)))) {
      claimed.add(port);
      claimed.add(port + busOffset);
      return port;
    }
  }
  throw new Error('no free loopback port pair found');
}

/** A scratch folder for config files (cluster nodes.conf, sentinel.conf); removed by `removeScratch`. */
export function scratchDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `${prefix}-`));
}

export function removeScratch(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export function waitForPing(port: number, deadlineMs = 10_000): Promise<void> {
  return waitForUrl(`redis://127.0.0.1:${port}`, deadlineMs);
}

/**
 * Throws unless the server answering on `port` is `child` (INFO's process_id): with suites running
 * in parallel, a server that failed to bind must not leave its test talking to another suite's.
 */
export async function answeredBy(port: number, child: ChildProcess): Promise<void> {
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    const info = String(await probe.info('server'));
    const pid = Number(/process_id:(\d+)/.exec(info)?.[1]);
    if (pid !== child.pid) {
      child.kill('SIGKILL');
      throw new Error(`port ${port} is answered by another process (pid ${pid}), not the redis-server just started (pid ${child.pid})`);
    }
  } finally {
    probe.disconnect();
  }
}

/**
 * Starts `redis-server` (`REDIS_SERVER_BIN`, or `serverBin`) with `args` on `port` and waits for PING: a data server
 * with persistence off, or (`sentinelConfig`) a sentinel on that config file (see `sentinelCommand`).
 * The process dies with SIGKILL on `stop()`.
 */
export async function spawnRedis(
  port: number,
  args: readonly string[],
  dir: string,
  sentinelConfig?: string,
  /** The server binary, when not the suite's `REDIS_SERVER_BIN` (a test that needs a given version). */
  serverBin = redisServerBin(),
): Promise<RedisProcess> {
  const common = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir];
  let command = serverBin;
  let argv = [...args, ...common, '--save', '', '--appendonly', 'no'];
  if (sentinelConfig) {
    const [bin, first] = sentinelCommand(sentinelConfig);
    command = bin;
    argv = [...first, ...common, ...args];
  }
  const child: ChildProcess = spawn(command, argv, { stdio: 'ignore' });
  let stopped = false;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      stopped = true;
      resolve();
    }),
  );
  await waitForPing(port);
  await answeredBy(port, child);
  const url = `redis://127.0.0.1:${port}`;
  const clients: Redis[] = [];
  return {
    host: '127.0.0.1',
    port,
    url,
    get stopped() {
      return stopped;
    },
    client() {
      const client = new Redis(url, { maxRetriesPerRequest: 1 });
      client.on('error', () => undefined);
      clients.push(client);
      // Forget it once closed: disconnecting a closed client again leaves a 2 s ioredis timer behind.
      client.once('end', () => {
        const index = clients.indexOf(client);
        if (index !== -1) clients.splice(index, 1);
      });
      return client;
    },
    pause() {
      child.kill('SIGSTOP');
    },
    resume() {
      child.kill('SIGCONT');
    },
    async stop() {
      for (const client of clients.splice(0)) client.disconnect();
      if (!stopped) {
        child.kill('SIGCONT');
        child.kill('SIGKILL');
      }
      await exited;
    },
  };
}
