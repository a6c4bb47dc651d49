import { now } from '../harness/clock';
import { median, percentile } from '../harness/stats';
import { adapterOf, noop, WorkerContext } from './context';

/** W1 child: one task, acquire + release on distinct (cycling) keys, back to back. */
export interface W1Result {
  readonly ops: number;
  readonly opsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** CPU time of this Node process per acquire+release (user + system), in microseconds. */
  readonly cpuUsPerOp: number;
}

const KEYS = 64;

export async function w1Child(context: WorkerContext): Promise<W1Result> {
  const adapter = adapterOf(context);
  const { ops, warmup } = context.job.params;
  for (let i = 0; i < warmup; i++) await adapter.run(`w1:${i % KEYS}`, noop);
  const latencies = new Array<number>(ops);
  const cpuBefore = process.cpuUsage();
  const started = now();
  for (let i = 0; i < ops; i++) {
    const opStarted = now();
    await adapter.run(`w1:${i % KEYS}`, noop);
    latencies[i] = now() - opStarted;
  }
  const elapsed = now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  return {
    ops,
    opsPerSec: (ops * 1000) / elapsed,
    p50Ms: median(latencies),
    p99Ms: percentile(latencies, 99),
    cpuUsPerOp: (cpu.user + cpu.system) / ops,
  };
}
