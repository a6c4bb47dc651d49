/**
 * The randomized hold model's child process (test/fixtures/line-waiters.ts): 3-6 waiters on one plain
 * or fair lock, killed (SIGKILL) or stopped (SIGSTOP, then SIGCONT) mid-line, and its bodies checked
 * by the witness across processes.
 */
import type { LockModuleOptions } from '../../../lib';
import { HoldWitness, type Visit } from '../hold-witness';
import type { LineWaitersChild } from '../line-waiters';
import { sleep } from '../lock-app';
import type { LayoutKinds } from './kinds';
import type { ChildPlan } from './schedule';

/** How far apart this process's clock and the child's may read (both are performance.timeOrigin + now). */
const CHILD_CLOCK_SLACK_MS = 3;

/** The child's waiters: started now, killed or stopped mid-line, then waited for (the caller bounds the wait). */
export async function runChild(plan: ChildPlan, waiters: LineWaitersChild, redisUrl: string, options: LockModuleOptions, kinds: LayoutKinds): Promise<void> {
  waiters.start({
    redisUrl,
    options,
    kind: plan.kind,
    name: kinds.lockName(plan.kind, plan.name),
    waiters: plan.waiters,
    bodyMs: plan.bodyMs,
    waitTime: plan.waitTime,
  });
  await sleep(plan.actAfter);
  if (plan.action === 'kill') {
    waiters.kill();
    return waiters.exited;
  }
  waiters.stop();
  await sleep(plan.stopMs);
  waiters.cont();
  return waiters.exited;
}

/** The child's bodies as witness visits (times shrunk by the clocks' slack; a frozen or killed body counts as aborted then). */
function childVisits(waiters: LineWaitersChild, plan: ChildPlan, endedAt: number, kinds: LayoutKinds): Visit[] {
  const { resources, mode } = kinds.resourcesOf(plan.kind, plan.name);
  return [...waiters.visits.values()].map((v, i) => {
    // A body the child never reported leaving ended when the child was killed.
    const exitedAt = v.exitedAt ?? waiters.killedAt ?? endedAt;
    let abortedAt = v.abortedAt ?? (v.exitedAt === undefined ? exitedAt : undefined);
    for (const stop of waiters.stopped) {
      if (stop.from < exitedAt && (stop.to ?? Infinity) > v.enteredAt) abortedAt = Math.min(abortedAt ?? Infinity, Math.max(stop.from, v.enteredAt));
    }
    return {
      id: 1_000_000 + i,
      who: `child/${v.index}`,
      resources,
      mode,
      enteredAt: v.enteredAt + CHILD_CLOCK_SLACK_MS,
      exitedAt: Math.max(v.enteredAt + CHILD_CLOCK_SLACK_MS, exitedAt - CHILD_CLOCK_SLACK_MS),
      abortedAt: abortedAt === undefined ? undefined : abortedAt - CHILD_CLOCK_SLACK_MS,
    };
  });
}

/**
 * What broke across processes: overlaps between this process's bodies and the child's, and the
 * child's own errors. A body of this process that was running when its event loop stalled could not
 * be told anything meanwhile (as a frozen child's): it counts as aborted then.
 */
export function brokenAcrossProcesses(
  witness: HoldWitness,
  stalled: ReadonlyArray<{ from: number; to: number }>,
  waiters: LineWaitersChild,
  plan: ChildPlan,
  kinds: LayoutKinds,
): string[] {
  const across = new HoldWitness();
  for (const visit of witness.visits) {
    const frozen = stalled.filter(({ from, to }) => from < (visit.exitedAt ?? Infinity) && to > visit.enteredAt).map(({ from }) => Math.max(from, visit.enteredAt));
    across.visits.push({ ...visit, abortedAt: Math.min(visit.abortedAt ?? Infinity, ...frozen) === Infinity ? undefined : Math.min(visit.abortedAt ?? Infinity, ...frozen) });
  }
  across.visits.push(...childVisits(waiters, plan, witness.now(), kinds));
  return [
    ...across
      .violations()
      .filter((v) => v.includes('child/'))
      .map((v) => `overlap (across processes): ${v.replace(/\+(-?\d+)ms/g, (_, t: string) => witness.at(Number(t) + across.origin))}`),
    ...waiters.errors.map((e) => `child: ${e}`),
  ];
}
