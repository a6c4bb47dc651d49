import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { dockerReachable, freePort, waitForPing } from '../../test/support/local-redis';

export { freePort } from '../../test/support/local-redis';

/** A Redis for the demo, and how to let go of it. */
export interface DemoRedis {
  readonly url: string;
  /** How it was found, for the report. */
  readonly origin: string;
  stop(): Promise<void>;
}

export class NoRedisError extends Error {
  constructor() {
    super(
      [
        'The demo needs a Redis server and found none. Any one of these works:',
        '  - REDIS_URL=redis://host:6379 npm run demo      (a Redis you already have)',
        '  - install redis-server (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)',
        '  - start Docker: the demo then runs redis:7-alpine through testcontainers',
      ].join('\n'),
    );
  }
}

/** REDIS_URL if set; else a `redis-server` binary on a free port; else a testcontainers Redis; else NoRedisError. */
export async function provideRedis(): Promise<DemoRedis> {
  if (process.env.REDIS_URL) {
    await waitForPing(process.env.REDIS_URL, 5_000);
    return { url: process.env.REDIS_URL, origin: `REDIS_URL (${process.env.REDIS_URL})`, stop: async () => undefined };
  }
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0) return startBinary();
  if (dockerReachable()) return startContainer();
  throw new NoRedisError();
}

async function startBinary(): Promise<DemoRedis> {
  const port = await freePort();
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `redis://127.0.0.1:${port}`;
  try {
    await waitForPing(url, 10_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return {
    url,
    origin: `redis-server started by the demo on port ${port}`,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function startContainer(): Promise<DemoRedis> {
  const { GenericContainer } = await import('testcontainers');
  const container = await new GenericContainer('redis:7-alpine').withExposedPorts(6379).start();
  const url = `redis://${container.getHost()}:${container.getMappedPort(6379)}`;
  await waitForPing(url, 10_000);
  return { url, origin: 'redis:7-alpine container started by the demo (testcontainers)', stop: async () => void (await container.stop()) };
}



