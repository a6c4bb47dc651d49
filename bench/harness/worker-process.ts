import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { NODE_CORE, pinned } from './cpu';
import { Job, JOB_ENV, Message } from './messages';

const WORKER_SCRIPT = join(__dirname, '..', 'worker.js');

/**
 * A fresh Node process running one job (parent side). Its result arrives as a `result` message; it
 * is killed if it has not answered within `timeoutMs`, so no loop of the bench can hang the run.
 */
export class WorkerProcess {
  readonly result: Promise<unknown>;
  private readonly child: ChildProcess;
  private readonly handlers = new Map<string, (message: Message) => void>();
  private readonly stderr: string[] = [];

  constructor(
    readonly job: Job,
    timeoutMs: number,
  ) {
    const [command, args] = pinned(NODE_CORE, process.execPath, [WORKER_SCRIPT]);
    this.child = spawn(command, args, {
      env: { ...process.env, [JOB_ENV]: JSON.stringify(job) },
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    });
    this.child.stderr?.on('data', (chunk: Buffer) => {
      this.stderr.push(chunk.toString());
      if (this.stderr.length > 50) this.stderr.shift();
    });
    this.result = new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.kill();
        reject(new Error(`timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      this.child.on('message', (message: Message) => {
        if (message.type === 'result') {
          clearTimeout(timer);
          resolve(message.result);
        } else if (message.type === 'failed') {
          clearTimeout(timer);
          reject(new Error(String(message.error)));
        } else {
          this.handlers.get(message.type)?.(message);
        }
      });
      this.child.on('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`exited (${signal ?? code}) before answering${this.stderrTail()}`));
      });
    });
    this.result.catch(() => undefined);
  }

  on(type: string, handler: (message: Message) => void): void {
    this.handlers.set(type, handler);
  }

  send(message: Message): void {
    if (this.child.connected) this.child.send(message);
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  /** Waits for the process to be gone (after a result it exits by itself). */
  exited(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => this.child.once('exit', () => resolve()));
  }

  private stderrTail(): string {
    const tail = this.stderr.join('').trim().split('\n').slice(-8).join('\n');
    return tail ? `:\n${tail}` : '';
  }
}

/** Runs one single-process job to its result. */
export async function runJob<T>(job: Job, timeoutMs: number): Promise<T> {
  const worker = new WorkerProcess(job, timeoutMs);
  try {
    return (await worker.result) as T;
  } finally {
    worker.kill();
    await worker.exited();
  }
}
