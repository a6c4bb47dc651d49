import { now } from '../harness/clock';
import { adminClient } from '../harness/redis-server';
import { redisCpuMs } from '../harness/redis-meters';
import { adapterOf, noop, WorkerContext } from './context';

/** W2 child: 64 tasks in one process, each acquiring + releasing its own key, for a fixed time. */
export interface W2Result {
  readonly ops: number;
  readonly opsPerSec: number;
  /** CPU time of this Node process per acquire+release (user + system), in microseconds. */
  readonly cpuUsPerOp: number;
  /** CPU time of redis-server per acquire+release (INFO cpu), in microseconds. */
  readonly redisCpuUsPerOp: number;
}

async function loopUntil(stopAt: number, work: () => Promise<unknown>): Promise<number> {
  let ops = 0;
  while (now() < stopAt) {
    await work();
    ops += 1;
  }
  return ops;
}

export async function w2Child(context: WorkerContext): Promise<W2Result> {
  const adapter = adapterOf(context);
  const { tasks, warmupMs, durationMs } = context.job.params;
  const taskIds = Array.from({ length: tasks }, (_, task) => task);
  const warmupEnd = now() + warmupMs;
  await Promise.all(taskIds.map((task) => loopUntil(warmupEnd, () => adapter.run(`w2:${task}`, noop))));
  const admin = adminClient(context.job.redisUrl);
  const redisCpuBefore = await redisCpuMs(admin);
  const cpuBefore = process.cpuUsage();
  const started = now();
  const stopAt = started + durationMs;
  const counts = await Promise.all(taskIds.map((task) => loopUntil(stopAt, () => adapter.run(`w2:${task}`, noop))));
  const elapsed = now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const redisCpu = (await redisCpuMs(admin)) - redisCpuBefore;
  admin.disconnect();
  const ops = counts.reduce((a, b) => a + b, 0);
  return { ops, opsPerSec: (ops * 1000) / elapsed, cpuUsPerOp: (cpu.user + cpu.system) / ops, redisCpuUsPerOp: (redisCpu * 1000) / ops };
}
