import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { TYPESCRIPT_CHILD_ARGS } from './child-process';

/** One body of the child, on this process's `performance.now()` clock. */
export interface ChildVisit {
  index: number;
  enteredAt: number;
  exitedAt?: number;
  abortedAt?: number;
}

/**
 * `test/fixtures/line-waiters.ts` in a child process: started ahead (loading the library costs
 * seconds), then told to start many waiters on one lock; killed or stopped by the caller. Reports
 * every body it ran with times mapped onto this process's monotonic clock (both processes read
 * `performance.timeOrigin + performance.now()`: aligned to about a millisecond).
 */
export class LineWaitersChild {
  readonly visits = new Map<number, ChildVisit>();
  readonly errors: string[] = [];
  /** Intervals (this process's clock) during which the child was stopped (SIGSTOP .. SIGCONT). */
  readonly stopped: Array<{ from: number; to?: number }> = [];
  /** When the child was killed (this process's clock): its bodies ended then. */
  killedAt: number | undefined;
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  private doneSeen = false;

  private constructor(private readonly child: ChildProcess) {
    const lines = createInterface({ input: child.stdout! });
    let onReady!: () => void;
    this.ready = new Promise((resolve) => (onReady = resolve));
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    let stderr = '';
    child.stderr?.on('data', (d) => (stderr += d));
    child.once('exit', (code, signal) => {
      if (code !== 0 && signal === null) this.errors.push(`child exited ${code}: ${stderr.slice(0, 500)}`);
    });
    lines.on('line', (line) => {
      const [what, index, at] = line.split(' ');
      const t = Number(at) - performance.timeOrigin;
      if (what === 'ready') return onReady();
      if (what === 'done') this.doneSeen = true;
      else if (what === 'error') this.errors.push(line);
      else if (what === 'enter') this.visits.set(Number(index), { index: Number(index), enteredAt: t });
      else if (what === 'abort') this.visits.get(Number(index))!.abortedAt ??= t;
      else if (what === 'exit') this.visits.get(Number(index))!.exitedAt = t;
    });
  }

  static spawn(): LineWaitersChild {
    const fixture = join(__dirname, '..', 'fixtures', 'line-waiters.ts');
    const child = spawn(process.execPath, [...TYPESCRIPT_CHILD_ARGS, fixture], {
      env: process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    return new LineWaitersChild(child);
  }

  get done(): boolean {
    return this.doneSeen;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  start(command: { redisUrl: string; options: object; kind: 'plain' | 'fair'; name: string; waiters: number; bodyMs: number; waitTime: number }): void {
    this.child.stdin!.write(`${JSON.stringify(command)}\n`);
  }

  kill(): void {
    if (this.alive) {
      this.child.kill('SIGKILL');
      this.killedAt ??= performance.now();
    }
    this.cont();
  }

  stop(): void {
    if (!this.alive) return;
    this.child.kill('SIGSTOP');
    this.stopped.push({ from: performance.now() });
  }

  cont(): void {
    const last = this.stopped[this.stopped.length - 1];
    if (last && last.to === undefined) {
      if (this.alive) this.child.kill('SIGCONT');
      last.to = performance.now();
    }
  }
}
