import Redis from 'ioredis';
import { now, sleep } from '../harness/clock';
import type { Job } from '../harness/messages';
import { adminClient } from '../harness/redis-server';
import { median, percentile } from '../harness/stats';
import { WorkerProcess } from '../harness/worker-process';
import { adapterOf, runUntilAcquired, WorkerContext } from './context';

/**
 * W3: 4 processes x 8 tasks on ONE key, a non-atomic GET / SET+1 of a counter inside the critical
 * section. The counter value each holder reads is its place in the global order of acquisitions, so
 * the parent can merge the processes' records, count real owner changes, and catch overlaps (two
 * holders reading the same value) and lost updates (final counter short of the acquisitions).
 */
const LOCK_KEY = 'w3:key';
const COUNTER_KEY = 'w3:counter';

interface W3ProcessRecords {
  /** Per acquisition: counter value read, task index, acquired-at and requested-at (ms, monotonic). */
  readonly seq: number[];
  readonly task: number[];
  readonly acquiredAt: number[];
  readonly requestedAt: number[];
  readonly giveUps: number;
  /** Holders of this process found inside the critical section at once. */
  readonly localOverlaps: number;
}

export async function w3Child(context: WorkerContext): Promise<W3ProcessRecords> {
  const adapter = adapterOf(context);
  const { tasks } = context.job.params;
  const data = new Redis(context.job.redisUrl); // the application's own connection for its data
  await data.ping();
  const records = { seq: [] as number[], task: [] as number[], acquiredAt: [] as number[], requestedAt: [] as number[] };
  let giveUps = 0;
  let localOverlaps = 0;
  let inside = 0;

  context.parent.send({ type: 'ready' });
  const go = await context.parent.next('go');
  const startAt = go.startAt as number;
  const stopAt = go.stopAt as number;
  await sleep(Math.max(0, startAt - now()));

  const task = async (index: number): Promise<void> => {
    while (now() < stopAt) {
      const requestedAt = now();
      await runUntilAcquired(
        adapter,
        LOCK_KEY,
        async () => {
          const acquiredAt = now();
          if (++inside > 1) localOverlaps += 1;
          const value = Number((await data.get(COUNTER_KEY)) ?? 0);
          await data.set(COUNTER_KEY, value + 1);
          inside -= 1;
          records.seq.push(value);
          records.task.push(index);
          records.acquiredAt.push(acquiredAt);
          records.requestedAt.push(requestedAt);
        },
        () => {
          giveUps += 1;
          return now() < stopAt;
        },
      );
    }
  };
  await Promise.all(Array.from({ length: tasks }, (_, index) => task(index)));
  data.disconnect();
  return { ...records, giveUps, localOverlaps };
}

export interface W3Result {
  readonly handoffsPerSec: number;
  readonly acquisitionsPerSec: number;
  readonly waitP50Ms: number;
  readonly waitP99Ms: number;
  /** Per-task acquisitions in the window: min / max over all tasks. */
  readonly minPerTask: number;
  readonly maxPerTask: number;
  readonly fairness: number;
  readonly giveUps: number;
  /** Acquisitions whose increment is missing from the counter. */
  readonly lostUpdates: number;
  /** Counter values read by more than one holder: two holders inside at once. */
  readonly overlaps: number;
  readonly safe: boolean;
}

export interface ParentRun {
  readonly redisUrl: string;
  readonly adapter: string;
  readonly params: Readonly<Record<string, number>>;
  readonly timeoutMs: number;
}

export async function runW3(run: ParentRun): Promise<W3Result> {
  const { processes, tasks, durationMs } = run.params;
  const admin = adminClient(run.redisUrl);
  await admin.del(COUNTER_KEY);
  const workers = Array.from(
    { length: processes },
    (_, role) => new WorkerProcess({ task: 'w3', adapter: run.adapter, redisUrl: run.redisUrl, role, params: { tasks } } satisfies Job, run.timeoutMs),
  );
  try {
    await Promise.all(workers.map((worker) => new Promise<void>((resolve, reject) => {
      worker.on('ready', () => resolve());
      worker.result.catch(reject);
    })));
    const startAt = now() + 200;
    const stopAt = startAt + durationMs;
    for (const worker of workers) worker.send({ type: 'go', startAt, stopAt });
    const perProcess = (await Promise.all(workers.map((worker) => worker.result))) as W3ProcessRecords[];
    const counter = Number((await admin.get(COUNTER_KEY)) ?? 0);
    return summarize(perProcess, counter, tasks, startAt, stopAt);
  } finally {
    for (const worker of workers) worker.kill();
    await Promise.all(workers.map((worker) => worker.exited()));
    admin.disconnect();
  }
}

function summarize(perProcess: W3ProcessRecords[], counter: number, tasksPerProcess: number, startAt: number, stopAt: number): W3Result {
  const all: Array<{ seq: number; task: number; acquiredAt: number; wait: number }> = [];
  let giveUps = 0;
  let overlaps = 0;
  perProcess.forEach((records, process) => {
    giveUps += records.giveUps;
    overlaps += records.localOverlaps;
    for (let i = 0; i < records.seq.length; i++) {
      all.push({
        seq: records.seq[i],
        task: process * tasksPerProcess + records.task[i],
        acquiredAt: records.acquiredAt[i],
        wait: records.acquiredAt[i] - records.requestedAt[i],
      });
    }
  });
  all.sort((a, b) => a.seq - b.seq || a.acquiredAt - b.acquiredAt);
  for (let i = 1; i < all.length; i++) if (all[i].seq === all[i - 1].seq) overlaps += 1;
  const lostUpdates = all.length - counter;

  const inWindow = all.filter((record) => record.acquiredAt >= startAt && record.acquiredAt < stopAt);
  let ownerChanges = 0;
  for (let i = 1; i < inWindow.length; i++) if (inWindow[i].task !== inWindow[i - 1].task) ownerChanges += 1;
  const perTask = new Array<number>(perProcess.length * tasksPerProcess).fill(0);
  for (const record of inWindow) perTask[record.task] += 1;
  const minPerTask = Math.min(...perTask);
  const maxPerTask = Math.max(...perTask);
  const seconds = (stopAt - startAt) / 1000;
  const waits = inWindow.map((record) => record.wait);
  return {
    handoffsPerSec: ownerChanges / seconds,
    acquisitionsPerSec: inWindow.length / seconds,
    waitP50Ms: median(waits),
    waitP99Ms: percentile(waits, 99),
    minPerTask,
    maxPerTask,
    fairness: maxPerTask > 0 ? minPerTask / maxPerTask : 0,
    giveUps,
    lostUpdates,
    overlaps,
    safe: lostUpdates === 0 && overlaps === 0,
  };
}
