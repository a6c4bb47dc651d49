import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, waitForPing } from './local-redis';

/** The bench's relay (bench/relay/delay-proxy.c): a fixed one-way delay on every byte, both ways, in order. */
const RELAY_SOURCE = join(__dirname, '..', '..', 'bench', 'relay', 'delay-proxy.c');

/** Compiles the relay once per source version (cached in the OS temp dir, so parallel runs share it). */
function relayBinary(): string {
  const source = readFileSync(RELAY_SOURCE);
  const binary = join(tmpdir(), 'lock-test-relay', `delay-proxy-${createHash('sha1').update(source).digest('hex').slice(0, 12)}`);
  if (existsSync(binary)) return binary;
  mkdirSync(join(binary, '..'), { recursive: true });
  const partial = `${binary}.${process.pid}`;
  const build = spawnSync('cc', ['-O2', '-pthread', '-o', partial, RELAY_SOURCE], { encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`building the delay relay failed (cc ${build.status ?? build.error?.message}): ${build.stderr}`);
  spawnSync('mv', ['-f', partial, binary]);
  return binary;
}

/**
 * A slow network in front of a local Redis: clients of `url` see every reply `oneWayMs` x 2 after
 * their command left (a command reaches Redis `oneWayMs` after it was written, its reply comes back
 * `oneWayMs` after Redis answered), so a reply can arrive after a short lease it granted has ended.
 * A separate process (no event-loop stall of the test delays it further).
 */
export class DelayRelay {
  private constructor(
    readonly url: string,
    readonly oneWayMs: number,
    private readonly stopRelay: () => Promise<void>,
  ) {}

  static async start(targetPort: number, oneWayMs: number): Promise<DelayRelay> {
    const binary = relayBinary();
    const port = await freePort();
    const child = spawn(binary, [String(port), String(targetPort), String(Math.round(oneWayMs * 1000))], { stdio: ['ignore', 'ignore', 'inherit'] });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const kill = (): void => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    };
    process.once('exit', kill);
    const url = `redis://127.0.0.1:${port}`;
    try {
      await waitForPing(url, 10_000, () => (child.exitCode !== null ? `the delay relay exited with code ${child.exitCode}` : undefined));
    } catch (error) {
      kill();
      throw error;
    }
    return new DelayRelay(url, oneWayMs, async () => {
      kill();
      await exited;
      process.removeListener('exit', kill);
    });
  }

  /** Kills the relay: every connection through it drops. */
  stop(): Promise<void> {
    return this.stopRelay();
  }
}
