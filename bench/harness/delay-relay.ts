import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, waitForPing } from '../../test/support/local-redis';
import { pinned, REDIS_CORE } from './cpu';

/** The relay's C source, kept in the repo (bench/relay) and compiled at bench time next to the JS. */
const RELAY_SOURCE = join(__dirname, '..', '..', '..', 'bench', 'relay', 'delay-proxy.c');
const RELAY_BINARY = join(__dirname, '..', 'relay', 'delay-proxy');

/**
 * The delay relay in front of the bench's redis-server (bench/relay/delay-proxy.c): every client
 * connects to `url`, and each chunk of bytes leaves the relay a fixed delay after it arrived, in
 * both directions, in order. Pinned to the Redis core: the relay stands for the network, so it must
 * not take CPU from the Node processes being measured, and redis-server leaves that core mostly idle.
 */
export interface DelayRelay {
  readonly url: string;
  readonly port: number;
  readonly oneWayUs: number;
  /** How the relay process is pinned, for the report. */
  readonly pinning: string;
  stop(): Promise<void>;
}

function buildRelay(): void {
  mkdirSync(join(RELAY_BINARY, '..'), { recursive: true });
  const build = spawnSync('cc', ['-O2', '-pthread', '-o', RELAY_BINARY, RELAY_SOURCE], { encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`building the delay relay failed (cc ${build.status ?? build.error?.message}): ${build.stderr}`);
}

export async function startDelayRelay(targetPort: number, oneWayUs: number): Promise<DelayRelay> {
  buildRelay();
  const port = await freePort();
  const [command, args] = pinned(REDIS_CORE, RELAY_BINARY, [String(port), String(targetPort), String(oneWayUs)]);
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  // Also when the bench dies on an error or process.exit: a relay must never outlive its run.
  process.once('exit', kill);
  const url = `redis://127.0.0.1:${port}`;
  try {
    await waitForPing(url, 10_000, () => (child.exitCode !== null ? `the delay relay exited with code ${child.exitCode}` : undefined));
  } catch (error) {
    kill();
    throw error;
  }
  return {
    url,
    port,
    oneWayUs,
    pinning: command === 'taskset' ? `taskset: delay relay on core ${REDIS_CORE} (with redis-server)` : 'delay relay not pinned',
    async stop() {
      kill();
      await exited;
      process.removeListener('exit', kill);
    },
  };
}
