import { ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { NODE_CORE, pinned } from './cpu';
import { now } from './clock';

export const JAVA_BIN = process.env.JAVA_BIN || 'java';
/** The bench's main class in the Redisson driver jar (test/interop/redisson-driver/). */
const MAIN_CLASS = 'interop.RedissonBench';

/**
 * One JVM running a Java Redisson workload (`interop.RedissonBench <workload> --name value...`),
 * pinned to the Node processes' core: the JVM is a client like them. Its stdout is a line
 * protocol: `ready` (connected and warmed up), `peer <i>` (W4), `<word>\t<json>` answering an
 * `ask` (the cost section's windows), `result\t<json>`. Killed when it has not answered within
 * `timeoutMs`, like a worker process.
 */
export class BenchJvm {
  /** Milliseconds from the spawn to `ready`: JVM start, connection and JIT warm-up. */
  readonly ready: Promise<number>;
  readonly result: Promise<unknown>;
  private readonly child: ChildProcess;
  private readonly stderr: string[] = [];
  private peerHandler: ((i: number) => void) | undefined;
  /** Waiting `ask`s, answered in order. */
  private readonly answers: Array<(answer: unknown) => void> = [];

  constructor(jar: string, workload: string, options: Readonly<Record<string, string | number>>, timeoutMs: number) {
    const args = ['-Xmx256m', '-cp', jar, MAIN_CLASS, workload, ...Object.entries(options).flatMap(([name, value]) => [`--${name}`, String(value)])];
    const [command, argv] = pinned(NODE_CORE, JAVA_BIN, args);
    const spawned = now();
    this.child = spawn(command, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
    createInterface({ input: this.child.stderr! }).on('line', (line) => {
      this.stderr.push(line);
      if (this.stderr.length > 30) this.stderr.shift();
    });
    let readyResolve!: (ms: number) => void;
    this.ready = new Promise((resolve) => (readyResolve = resolve));
    this.result = new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.kill();
        reject(new Error(`${workload} JVM timed out after ${timeoutMs} ms${this.stderrTail()}`));
      }, timeoutMs);
      createInterface({ input: this.child.stdout! }).on('line', (line) => {
        if (line === 'ready') readyResolve(now() - spawned);
        else if (line.startsWith('peer ')) this.peerHandler?.(Number(line.slice(5)));
        else if (line.startsWith('result\t')) {
          clearTimeout(timer);
          resolve(JSON.parse(line.slice(7)));
        } else if (/^\w+\t/.test(line)) this.answers.shift()?.(JSON.parse(line.slice(line.indexOf('\t') + 1)));
      });
      this.child.once('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      this.child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`${workload} JVM exited (${signal ?? code}) before answering${this.stderrTail()}`));
      });
    });
    this.result.catch(() => undefined);
    // A JVM that failed before `ready` must not leave its waiters hanging.
    this.ready = Promise.race([this.ready, this.result.then(() => Number.NaN)]);
  }

  /** W4: the JVM holds the lock for hand-off i (its `peer <i>` lines). */
  onPeer(handler: (i: number) => void): void {
    this.peerHandler = handler;
  }

  /** Sends a request line; resolves with the JVM's answer to it (rejects when the JVM ends first). */
  ask(line: string): Promise<unknown> {
    const answered = new Promise<unknown>((resolve) => this.answers.push(resolve));
    this.send(line);
    const ended = this.result.then(() => Promise.reject(new Error(`the JVM ended without answering "${line}"`)));
    return Promise.race([answered, ended]);
  }

  send(line: string): void {
    if (this.child.stdin?.writable) this.child.stdin.write(`${line}\n`);
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  exited(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => this.child.once('exit', () => resolve()));
  }

  private stderrTail(): string {
    return this.stderr.length ? `:\n${this.stderr.slice(-8).join('\n')}` : '';
  }
}
