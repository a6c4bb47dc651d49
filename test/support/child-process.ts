import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

/** Runs `test/fixtures/<name>.ts` in a child Node process (ts-node, transpile only). */
export function spawnFixture(name: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  return spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', join(__dirname, '..', 'fixtures', `${name}.ts`), ...args], {
    env: { ...process.env, ...env, TS_NODE_PROJECT: join(__dirname, '..', '..', 'tsconfig.json') },
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
