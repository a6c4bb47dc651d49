import { now, sleep } from '../harness/clock';
import type { Job } from '../harness/messages';
import { median, percentile } from '../harness/stats';
import { WorkerProcess } from '../harness/worker-process';
import { adapterOf, WorkerContext } from './context';
import type { ParentRun } from './w3-contended';

/**
 * W4: release-to-acquire latency across processes. Two processes take turns: hand-off i is released
 * by process i % 2 and acquired by the other, which then holds for hand-off i + 1. The holder tells
 * the other process (through the parent) to start waiting, holds 10-20 ms (random, so a poller's
 * retry ticks fall anywhere relative to the release), stamps the release, and returns from the
 * critical section; the waiter stamps the acquisition on entry. Both stamps are on the machine's
 * monotonic clock. A hand-off whose waiter only started asking less than 2 ms before the release
 * (a slow relay on a loaded machine) did not measure waiting and is left out, and counted.
 */
const MIN_WAITING_MS = 2;
const LOCK_KEY = 'w4:key';

export interface W4ProcessStamps {
  /** Indexed by hand-off; only this process's side of each hand-off is set. */
  readonly releasedAt: Array<number | null>;
  readonly acquiredAt: Array<number | null>;
  /** When this process started asking for the lock of hand-off i. */
  readonly askedAt: Array<number | null>;
  readonly giveUps: number;
}

export async function w4Child(context: WorkerContext): Promise<W4ProcessStamps> {
  const adapter = adapterOf(context);
  const { handoffs, holdMs, holdJitterMs } = context.job.params;
  const releasedAt = new Array<number | null>(handoffs).fill(null);
  const acquiredAt = new Array<number | null>(handoffs).fill(null);
  const askedAt = new Array<number | null>(handoffs).fill(null);
  let giveUps = 0;

  /** Holding the lock: announce hand-off i, hold a while, stamp the release. */
  const holdFor = async (i: number): Promise<void> => {
    context.parent.send({ type: 'peer', i });
    await sleep(holdMs + Math.random() * holdJitterMs);
    releasedAt[i] = now();
  };

  context.parent.send({ type: 'ready' });
  await context.parent.next('go');
  if (context.job.role === 0) await adapter.run(LOCK_KEY, () => holdFor(0));
  for (;;) {
    const i = (await context.parent.next('peer')).i as number;
    if (i >= handoffs) break;
    askedAt[i] = now();
    for (;;) {
      try {
        await adapter.run(LOCK_KEY, async () => {
          acquiredAt[i] = now();
          if (i + 1 < handoffs) await holdFor(i + 1);
          else context.parent.send({ type: 'peer', i: handoffs });
        });
        break;
      } catch (error) {
        if (!adapter.gaveUp(error)) throw error;
        giveUps += 1;
      }
    }
    if (i + 1 >= handoffs) break;
  }
  return { releasedAt, acquiredAt, askedAt, giveUps };
}

export interface W4Result {
  readonly handoffs: number;
  readonly medianMs: number;
  readonly p99Ms: number;
  readonly giveUps: number;
  /** Hand-offs left out: the waiter was not waiting yet when the lock was released. */
  readonly late: number;
  /** Every hand-off latency, so repetitions can be pooled. */
  readonly latenciesMs: number[];
}

export async function runW4(run: ParentRun): Promise<W4Result> {
  const { handoffs, holdMs, holdJitterMs } = run.params;
  const workers = [0, 1].map(
    (role) =>
      new WorkerProcess(
        { task: 'w4', adapter: run.adapter, redisUrl: run.redisUrl, role, params: { handoffs, holdMs, holdJitterMs } } satisfies Job,
        run.timeoutMs,
      ),
  );
  try {
    workers.forEach((worker, role) => worker.on('peer', (message) => workers[1 - role].send(message)));
    await Promise.all(workers.map((worker) => new Promise<void>((resolve, reject) => {
      worker.on('ready', () => resolve());
      worker.result.catch(reject);
    })));
    for (const worker of workers) worker.send({ type: 'go' });
    const [a, b] = (await Promise.all(workers.map((worker) => worker.result))) as W4ProcessStamps[];
    return pairHandoffs(handoffs, a, b);
  } finally {
    for (const worker of workers) worker.kill();
    await Promise.all(workers.map((worker) => worker.exited()));
  }
}

/**
 * The hand-offs of both processes' stamps, from hand-off `from` on (the Java rows leave their
 * warm-up hand-offs out): release to acquisition, a waiter that asked too late left out.
 */
export function pairHandoffs(handoffs: number, a: W4ProcessStamps, b: W4ProcessStamps, from = 0): W4Result {
  const latenciesMs: number[] = [];
  let late = 0;
  for (let i = from; i < handoffs; i++) {
    const released = a.releasedAt[i] ?? b.releasedAt[i];
    const acquired = a.acquiredAt[i] ?? b.acquiredAt[i];
    const asked = a.askedAt[i] ?? b.askedAt[i];
    if (released === null || acquired === null || asked === null) continue;
    if (released - asked < MIN_WAITING_MS) late += 1;
    else latenciesMs.push(acquired - released);
  }
  return {
    handoffs: latenciesMs.length,
    medianMs: median(latenciesMs),
    p99Ms: percentile(latenciesMs, 99),
    giveUps: a.giveUps + b.giveUps,
    late,
    latenciesMs,
  };
}
