import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from './redis';

/** One running sample-app process. */
export interface AppInstance {
  readonly url: string;
  readonly process: ChildProcess;
}

const ROOT = join(__dirname, '..', '..');
const MAIN = join(ROOT, 'sample-app', 'src', 'main.ts');

/** Starts `count` sample-app processes against `redisUrl`; resolves once every one is listening. */
export async function startInstances(count: number, redisUrl: string): Promise<AppInstance[]> {
  const ports = await Promise.all(Array.from({ length: count }, () => freePort()));
  const started = ports.map((port) => startInstance(port, redisUrl));
  const settled = await Promise.allSettled(started);
  const failed = settled.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) {
    await stopInstances(settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : [])));
    throw failed.reason;
  }
  return settled.map((result) => (result as PromiseFulfilledResult<AppInstance>).value);
}

function startInstance(port: number, redisUrl: string): Promise<AppInstance> {
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', MAIN], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), REDIS_URL: redisUrl, TS_NODE_PROJECT: join(ROOT, 'tsconfig.json') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`sample-app on port ${port} did not start within 60 s:\n${output}`));
    }, 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      if (output.includes('sample-app listening on')) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        child.off('exit', onExit);
        resolve({ url: `http://127.0.0.1:${port}`, process: child });
      }
    };
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`sample-app on port ${port} exited (${code}) before listening:\n${output}`));
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk));
    child.once('exit', onExit);
  });
}

/** Stops the processes (SIGTERM, so Nest's shutdown hooks release locks and close connections), killing stragglers. */
export async function stopInstances(instances: readonly AppInstance[]): Promise<void> {
  await Promise.all(
    instances.map(
      ({ process: child }) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
}
