import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { TYPESCRIPT_CHILD_ARGS } from './child-process';

/** An event the child printed, with when this process read it (performance.now()). */
export type ChildEvent = { ev: string; id?: string; at: number } & Record<string, unknown>;

/**
 * `test/fixtures/deadlock-random-chains.ts` in a child process, kept warm across runs (loading the library
 * costs seconds): JSON commands in, JSON events out (see the fixture).
 */
export class DeadlockChild {
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  private readonly listeners = new Set<(event: ChildEvent) => void>();
  stderr = '';

  private constructor(private readonly child: ChildProcess) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.stderr?.on('data', (d) => (this.stderr = (this.stderr + String(d)).slice(-4_000)));
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      let event: ChildEvent;
      try {
        event = { ...(JSON.parse(line) as object), at: performance.now() } as ChildEvent;
      } catch {
        return; // not ours (a library log line)
      }
      for (const listener of [...this.listeners]) listener(event);
    });
    this.ready = this.next((e) => e.ev === 'ready').then(() => undefined);
  }

  static spawn(): DeadlockChild {
    const fixture = join(__dirname, '..', 'fixtures', 'deadlock-random-chains.ts');
    const child = spawn(process.execPath, [...TYPESCRIPT_CHILD_ARGS, fixture], {
      env: process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    return new DeadlockChild(child);
  }

  /** Every event from now on. */
  on(listener: (event: ChildEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The next event for which `test` holds (rejects if the child exits first, or prints "fatal"). */
  next(test: (event: ChildEvent) => boolean): Promise<ChildEvent> {
    return new Promise((resolve, reject) => {
      const off = this.on((event) => {
        if (event.ev === 'fatal') {
          off();
          reject(new Error(`child: ${String(event.message)}`));
        } else if (test(event)) {
          off();
          resolve(event);
        }
      });
      void this.exited.then(() => {
        off();
        reject(new Error(`child exited: ${this.stderr}`));
      });
    });
  }

  send(command: object): void {
    this.child.stdin!.write(`${JSON.stringify(command)}\n`);
  }

  /** Sends `command` and resolves with the first event named `ev` after it. */
  request(command: object, ev: string): Promise<ChildEvent> {
    const answer = this.next((e) => e.ev === ev);
    this.send(command);
    return answer;
  }

  close(): Promise<void> {
    this.child.stdin?.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    return this.exited.finally(() => clearTimeout(timer));
  }
}
