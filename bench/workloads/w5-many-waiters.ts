import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { now, sleep } from '../harness/clock';
import { adminClient } from '../harness/redis-server';
import { callsBetween, commandCalls, ConnectionCount, connectionCount, SentCommands } from '../harness/redis-meters';
import { adapterOf, noop, runUntilAcquired, WorkerContext } from './context';

/**
 * W5: 1000 waiters in one process on one key (W5x: 20,000, this library only). A holder takes the key, starts the waiters, lets them
 * settle into waiting, then releases; the drain is the time from that release until every waiter
 * has held the lock once. Commands are counted on both sides over the drain: what the process sent
 * (the round trips it asked for) and what Redis ran (INFO commandstats, commands inside scripts
 * included); connections are counted (CLIENT LIST) while everybody waits.
 */
const LOCK_KEY = 'w5:key';

export interface W5Result {
  readonly waiters: number;
  /** Waiters that held the lock before the cap. */
  readonly drained: number;
  readonly drainMs: number;
  readonly sentPerHandoff: number;
  readonly redisCallsPerHandoff: number;
  /**
   * Commands sent per waiter per second in the second half of the settle period, when every waiter
   * has made its first attempts and only waits: 0 for a pub/sub design, about 1/retry for a poller.
   */
  readonly pollsPerWaiterSec: number;
  readonly connections: ConnectionCount;
  readonly giveUps: number;
  /**
   * The live V8 heap once every waiter waits (the most waiters alive at once), over the heap before
   * they started, both measured right after a full GC, per waiter, in bytes: everything a waiting
   * caller costs the process, the adapter's and the workload's own frames included.
   */
  readonly heapPerWaiterBytes: number;
  /** The same, from the highest heap sampled (every 20 ms, garbage included) while they settled. */
  readonly peakHeapPerWaiterBytes: number;
  /** Drain time per hand-off (ms): flat as the number of waiters grows when nothing is O(waiters). */
  readonly msPerHandoff: number;
}

/** A full GC, for a clean heap baseline (the worker is not started with --expose-gc). */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

export async function w5Child(context: WorkerContext): Promise<W5Result> {
  const sent = SentCommands.install();
  const adapter = adapterOf(context);
  const { waiters, settleMs, capMs } = context.job.params;
  const admin = adminClient(context.job.redisUrl);
  await admin.ping();
  let drained = 0;
  let giveUps = 0;
  let releasedAt = 0;

  // The waiters start from outside the holder's critical section: started inside it, they would
  // belong to the holder's call chain, which a reentrant lock rightly lets straight in.
  let startWaiters!: () => void;
  const waitersMayStart = new Promise<void>((resolve) => (startWaiters = resolve));
  let letGo!: () => void;
  const released = new Promise<void>((resolve) => (letGo = resolve));
  const holder = adapter.run(LOCK_KEY, async () => {
    startWaiters();
    await released;
    releasedAt = now();
  });
  await waitersMayStart;
  collectGarbage();
  const heapBefore = process.memoryUsage().heapUsed;
  let heapPeak = heapBefore;
  const heapSampler = setInterval(() => (heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed)), 20);
  const waiting = Array.from({ length: waiters }, () =>
    runUntilAcquired(adapter, LOCK_KEY, noop, () => {
      giveUps += 1;
      return releasedAt === 0 || now() - releasedAt < capMs;
    }).then(() => {
      drained += 1;
    }),
  );

  // First half of the settle: everybody's first attempts. Second half: waiting only.
  await sleep(settleMs / 2);
  const sentAtSettleMiddle = sent.total;
  const middleAt = now();
  await sleep(settleMs / 2);
  const pollsPerWaiterSec = ((sent.total - sentAtSettleMiddle) * 1000) / ((now() - middleAt) * waiters);
  clearInterval(heapSampler);
  heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
  collectGarbage();
  const heapWaiting = process.memoryUsage().heapUsed;
  const connections = await connectionCount(admin);
  const callsAtRelease = await commandCalls(admin);
  const sentAtRelease = sent.total;
  letGo();
  await holder;

  let capTimer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.allSettled(waiting), new Promise((resolve) => (capTimer = setTimeout(resolve, capMs)))]);
  clearTimeout(capTimer);
  const drainMs = now() - releasedAt;
  const sentInDrain = sent.total - sentAtRelease;
  const callsInDrain = callsBetween(callsAtRelease, await commandCalls(admin));
  admin.disconnect();
  const handoffs = Math.max(1, drained);
  return {
    waiters,
    drained,
    drainMs,
    sentPerHandoff: sentInDrain / handoffs,
    redisCallsPerHandoff: callsInDrain / handoffs,
    pollsPerWaiterSec,
    connections,
    giveUps,
    heapPerWaiterBytes: (heapWaiting - heapBefore) / waiters,
    peakHeapPerWaiterBytes: (heapPeak - heapBefore) / waiters,
    msPerHandoff: drainMs / handoffs,
  };
}
