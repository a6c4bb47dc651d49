/**
 * Entry point of every bench worker process: runs the one job in BENCH_JOB (a workload with one
 * adapter, or a floor) and reports its result over IPC, then exits. A fresh process per job means
 * no adapter shares a JIT, a connection pool or a timer with another.
 */
import { adapterSpec } from './adapters';
import type { LockAdapter } from './adapters/adapter';
import { Job, JOB_ENV } from './harness/messages';
import { ParentChannel } from './harness/parent-channel';
import { CHILD_TASKS } from './workloads';

async function main(): Promise<void> {
  const job = JSON.parse(process.env[JOB_ENV] ?? 'null') as Job | null;
  if (!job) throw new Error(`${JOB_ENV} is not set: this script is started by bench/run.ts`);
  const task = CHILD_TASKS[job.task];
  if (!task) throw new Error(`Unknown task "${job.task}"`);
  const parent = new ParentChannel();
  let adapter: LockAdapter | undefined;
  try {
    if (job.adapter) adapter = await adapterSpec(job.adapter).create(job.redisUrl);
    const result = await task({ job, parent, adapter });
    // Started by hand (no IPC channel, e.g. to profile one job): print the result instead.
    if (!process.send) process.stdout.write(`${JSON.stringify(result)}\n`);
    else await new Promise<void>((resolve) => process.send!({ type: 'result', result }, () => resolve()));
  } finally {
    // Closing is best effort: the process exits right after, and a library's close must not hide the result.
    await Promise.race([adapter?.close().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
    process.send?.({ type: 'failed', error: text }, () => process.exit(1));
    setTimeout(() => process.exit(1), 500).unref();
  },
);
