import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import Redis from 'ioredis';

/**
 * What the tests, the demo and the bench share to bring up a Redis of their own: a free loopback
 * port, a readiness probe, and whether a Docker engine is there for testcontainers.
 */

export function freePort(): Promise<number> {
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

/** Resolves once `url` answers PING; gives up after `timeoutMs`, or at once when `gaveUp()` says so. */
export async function waitForPing(url: string, timeoutMs = 10_000, gaveUp: () => string | undefined = () => undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reason = gaveUp();
    if (reason) throw new Error(`Redis at ${url} will not answer: ${reason}`);
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      if ((await probe.ping()) === 'PONG') {
        // quit() lets the socket close without ioredis's disconnect timer; a sentinel refuses QUIT.
        await probe.quit().catch(() => probe.disconnect());
        return;
      }
    } catch (error) {
      probe.disconnect();
      if (Date.now() > deadline) throw new Error(`Redis at ${url} did not answer: ${String(error)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
}

/** True when a Docker engine answers (testcontainers can run); LOCK_TEST_REDIS=binary forces binaries. */
export function dockerReachable(): boolean {
  if (process.env.LOCK_TEST_REDIS === 'binary') return false;
  if (!process.env.DOCKER_HOST && !existsSync('/var/run/docker.sock')) return false;
  return spawnSync('docker', ['info'], { timeout: 5_000, stdio: 'ignore' }).status === 0;
}
