import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import Redis from 'ioredis';
import { dockerReachable, waitForPing } from './local-redis';
import { answeredBy, freePortPair } from './redis-process';
import { redisServerBin } from './redis-binaries';

export { freePort } from './local-redis';

/** A Redis server of the test's own: a testcontainers container where Docker runs, else a local binary. */
export interface TestRedis {
  readonly host: string;
  readonly port: number;
  readonly url: string;
  /** A new client; the caller closes it (or `stop()` disconnects the ones it made). */
  client(): Redis;
  /** Freezes the server (SIGSTOP / container pause): it accepts connections but answers nothing. */
  pause(): Promise<void>;
  resume(): Promise<void>;
  stop(): Promise<void>;
}




function wrap(host: string, port: number, controls: Pick<TestRedis, 'pause' | 'resume'>, shutdown: () => Promise<void>): TestRedis {
  const url = `redis://${host}:${port}`;
  const clients: Redis[] = [];
  return {
    host,
    port,
    url,
    client() {
      const client = new Redis(url, { maxRetriesPerRequest: 1 });
      client.on('error', () => undefined);
      clients.push(client);
      return client;
    },
    ...controls,
    async stop() {
      for (const client of clients) client.disconnect();
      await shutdown();
    },
  };
}

/** Starts the `redis-server` at `binary` (a particular version, whatever `REDIS_SERVER_BIN` says) on a free port. */
export function startRedisBinary(binary: string, extraArgs: readonly string[] = []): Promise<TestRedis> {
  return startBinary(extraArgs, binary);
}

async function startBinary(extraArgs: readonly string[], binary = redisServerBin()): Promise<TestRedis> {
  // A port from this worker's slice; taken meanwhile by anything else, the server exits (or another
  // answers): try another one.
  for (let attempt = 1; ; attempt++) {
    const port = await freePortPair();
    const child: ChildProcess = spawn(
      binary,
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extraArgs],
      { stdio: 'ignore' },
    );
    let exitedEarly = false;
    const exited = new Promise<void>((resolve) =>
      child.once('exit', () => {
        exitedEarly = true;
        resolve();
      }),
    );
    try {
      await waitForPing(`redis://127.0.0.1:${port}`, 10_000, () => (exitedEarly ? 'the server exited' : undefined));
      await answeredBy(port, child);
    } catch (error) {
      child.kill('SIGKILL');
      if (attempt >= 3) throw error;
      continue;
    }
    return serverOf(port, child, exited);
  }
}

function serverOf(port: number, child: ChildProcess, exited: Promise<void>): TestRedis {
  return wrap(
    '127.0.0.1',
    port,
    {
      async pause() {
        child.kill('SIGSTOP');
      },
      async resume() {
        child.kill('SIGCONT');
      },
    },
    async () => {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await exited;
    },
  );
}

async function startContainer(): Promise<TestRedis> {
  const { GenericContainer } = await import('testcontainers');
  const container = await new GenericContainer('redis:7-alpine').withExposedPorts(6379).start();
  const host = container.getHost();
  const port = container.getMappedPort(6379);
  await waitForPing(`redis://${host}:${port}`, 10_000);
  const id = container.getId();
  return wrap(
    host,
    port,
    {
      async pause() {
        spawnSync('docker', ['pause', id]);
      },
      async resume() {
        spawnSync('docker', ['unpause', id]);
      },
    },
    async () => {
      await container.stop();
    },
  );
}

/**
 * Starts a fresh Redis for a suite: through testcontainers when a Docker engine is reachable and no
 * `REDIS_SERVER_BIN` names the server to test, otherwise that binary (default `redis-server`,
 * which `.ci/run` installs) on a free loopback port.
 */
export async function startRedis(extraArgs: readonly string[] = []): Promise<TestRedis> {
  if (extraArgs.length === 0 && !process.env.REDIS_SERVER_BIN && dockerReachable()) return startContainer();
  return startBinary(extraArgs);
}
