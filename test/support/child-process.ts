import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

/**
 * The Node arguments that let a child process load TypeScript: transpile-only, as ts-node does, from
 * a cache on disk that the children of a run share (scripts/transpile-cache.js; a child starts in ~0.4 s of
 * CPU rather than 3-4 s).
 */
export const TYPESCRIPT_CHILD_ARGS: readonly string[] = ['-r', join(__dirname, '..', '..', 'scripts', 'transpile-register.js')];

/** Runs `test/fixtures/<name>.ts` in a child Node process. */
export function spawnFixture(name: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawn(process.execPath, [...TYPESCRIPT_CHILD_ARGS, join(__dirname, '..', 'fixtures', `${name}.ts`), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Resolves with the child's stdout once it exits with code 0; rejects with its stderr otherwise. */
export function completion(child: ChildProcess): Promise<string> {
  let out = '';
  let err = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    child.once('exit', (code, signal) =>
      code === 0 ? resolve(out) : reject(new Error(`child exited ${code ?? signal}: ${err || out}`)),
    );
  });
}

/** Resolves when the child prints `line` on stdout. */
export function printed(child: ChildProcess, line: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += d;
      if (out.split('\n').includes(line)) {
        child.stdout?.off('data', onData);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`child exited ${code} before printing ${line}: ${out}`)));
  });
}
