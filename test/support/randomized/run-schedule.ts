/**
 * One schedule of the randomized hold model (test/hold-model/randomized.spec.ts), run on two module
 * instances of one real Redis in a given layout, and checked: the witness (no two bodies inside one
 * lock unless the earlier one's signal aborted first), the second witness (Redis says each body it
 * asks about holds its lock), across processes with the child's bodies, every op settled, and at the
 * end nothing held and no key without a TTL (but what the layout keeps by design).
 */
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import {
  InvalidLockNameError,
  LockError,
  LockNameConflictError,
  LockShutdownError,
  LockUnavailableError,
  type LockModuleOptions,
  type RunOptions,
} from '../../../lib';
import { snapshot } from '../app-keys';
import { holdAccounts } from '../../../lib/locks/redisson/redisson-base-lock';
import { LockEngine } from '../../../lib/engine/lock-engine';
import { stallAfterAttempt } from '../attempt-stall';
import { DelayRelay } from '../delay-relay';
import { stallEventLoop } from '../event-loop';
import { HoldWitness } from '../hold-witness';
import type { LineWaitersChild } from '../line-waiters';
import { createLockApp, sleep } from '../lock-app';
import type { RestartableRedis } from '../restartable-redis';
import { waitFor } from '../wait-for';
import { brokenAcrossProcesses, runChild } from './child-line';
import { holdSignal, LayoutKinds, reentryKind, type Body, type Layout } from './kinds';
import { LayoutAudit } from './layout-audit';
import { LeftBehind } from './left-behind';
import { OwnerModelOps } from './owner-model-ops';
import {
  describeSchedule,
  INSTANCES,
  NAMES,
  type AttemptStallOp,
  type FaultOp,
  type HostileOp,
  type JobOp,
  type Name,
  type RestartOp,
  type Schedule,
  type TwiceOp,
} from './schedule';

export const WATCHDOG = 900; // renewed every 300 ms
const COMMAND_TIMEOUT = 300;
const SETTLE_BOUND_MS = 20_000;

/** What a property run shares between its schedules. */
export interface RandomizedEnv {
  layout: Layout;
  redis: RestartableRedis;
  raw: Redis;
  /** A fresh prefix for the next schedule's names. */
  nextPrefix(): string;
  /** A child process for a schedule that has one (a warm one when there is). */
  takeChild(): LineWaitersChild;
}

/** A new module instance, retried while a fault keeps Redis from answering its bootstrap. */
async function startInstance(options: LockModuleOptions): Promise<TestingModule> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await createLockApp(options);
    } catch (error) {
      if (attempt >= 20) throw error;
      await sleep(100);
    }
  }
}

/** Runs one schedule; throws with every broken promise it saw. */
export async function runSchedule(env: RandomizedEnv, schedule: Schedule): Promise<void> {
  const { redis, raw } = env;
  const { ops } = schedule;
  const prefix = env.nextPrefix();
  const kinds = new LayoutKinds(env.layout, prefix);
  const t0 = performance.now();
  const trace = (what: string) => process.env.FC_TRACE && process.stderr.write(`${prefix} ${what} +${Math.round(performance.now() - t0)}ms\n`);
  const witness = new HoldWitness();
  // No delay while the instances bootstrap (a dozen round trips), the schedule's once they run.
  const relay = schedule.relay && (await DelayRelay.start(redis.port, 0));
  const optionsOf = (slot: number): LockModuleOptions => {
    const relayed = relay && schedule.relay?.instance === slot;
    return {
      redis: relayed ? relay.url : redis.url,
      watchdogTimeout: WATCHDOG,
      commandTimeout: COMMAND_TIMEOUT + (relayed ? 2 * schedule.relay!.oneWayMs : 0),
      ...(schedule.waiterTimeout === undefined ? {} : { fairLockWaiterTimeout: schedule.waiterTimeout }),
      // deadlockCheckAfter stays unset: layout 'redisson' refuses it (docs/redisson-interop.md#deadlocks).
      ...(env.layout === 'redisson' ? { layout: 'redisson' as const, redisson: { fencedLocks: schedule.redisson?.fencedLocks ?? false } } : {}),
    };
  };
  const started: TestingModule[] = [];
  const startTracked = async (slot: number): Promise<TestingModule> => {
    const app = await startInstance(optionsOf(slot));
    started.push(app);
    return app;
  };
  const child = schedule.child ? env.takeChild() : undefined;
  const [instances] = await Promise.all([Promise.all(Array.from({ length: INSTANCES }, (_, slot) => startTracked(slot))), child?.ready]);
  if (relay) await relay.setDelay(schedule.relay!.oneWayMs);
  trace('instances started');
  const unexpected: string[] = [];
  /**
   * The second witness (docs/hand-off-protocol.md): a body that starts with a live signal asks Redis
   * whether it holds the lock (`LayoutKinds.heldInRedis`); "no" while its signal is still live (after
   * the timers due have run) and its body still runs is a body on a grant Redis does not hold.
   */
  const notGranted: string[] = [];
  const timers: NodeJS.Timeout[] = [];
  const stalls: Array<{ disarm(): void }> = [];
  /** When this process's event loop stood still (a body running then could not be told anything). */
  const stalled: Array<{ from: number; to: number }> = [];
  const stall = (ms: number): void => {
    const from = performance.now();
    stallEventLoop(ms);
    stalled.push({ from, to: performance.now() });
  };
  const leftBehind = new LeftBehind(kinds, witness, timers, unexpected);
  // The owner model's ops (issue 41): owner-model-ops.ts; who holds and what counts as told: owner-model-witness.ts.
  const ownerModel = new OwnerModelOps({
    kinds, witness, raw, instances, timers, unexpected, stalled,
    watchdogMs: WATCHDOG, relayedInstance: schedule.relay?.instance, hasChild: child !== undefined,
  });
  const expected = (error: unknown) => error instanceof LockError;

  // Issue 42 (layout 'redisson'): the application's keys of every type, written now and checked
  // unchanged at the end; with fencedLocks, every plain body's token and the token counters' values
  // in time order (a hostile call must never make a token go back, or two holds share one).
  const hostileChecks = env.layout === 'redisson';
  const appKeys = hostileChecks ? kinds.appKeys() : [];
  for (const { key, write } of appKeys) await write(raw, key);
  const appBefore = await Promise.all(appKeys.map(({ key }) => snapshot(raw, key)));
  const fenced = hostileChecks && schedule.redisson?.fencedLocks === true;
  const tokensSeen: Array<{ name: Name; token: number; who: string }> = [];
  const counterReadings = new Map<Name, number[]>(NAMES.map((n) => [n, []]));
  const readCounters = async (): Promise<void> => {
    if (!fenced) return;
    for (const n of NAMES) {
      const value = await raw.get(`redisson_lock_token:{${kinds.lockName('plain', n)}}`).catch(() => undefined);
      if (value !== undefined && value !== null) counterReadings.get(n)!.push(Number(value));
    }
  };

  const job = async (op: JobOp, index: number): Promise<void> => {
    const app = instances[op.instance];
    const who = `#${index}@${op.instance}`;
    const controller = op.abortAfter === undefined ? undefined : new AbortController();
    if (controller) timers.push(setTimeout(() => controller.abort(new Error(`${who} gave up`)), op.abortAfter));
    const { resources, mode } = kinds.resourcesOf(op.kind, op.name);
    const innerKind = op.reenter && reentryKind(op.kind, op.reenter);
    // Once set, a continuation the body left behind is a new owner.
    let bodyOver = false;
    const askRedis = async (signal: AbortSignal): Promise<void> => {
      if (signal.aborted) return;
      const askedAt = witness.now();
      const held = await kinds.heldInRedis(app, op.kind, op.name);
      if (held !== false) return;
      await sleep(0); // a lease that ended meanwhile aborts the signal from its timer
      if (!signal.aborted && !bodyOver) notGranted.push(`${who} (${op.kind} ${op.name}) ran with a live signal while Redis did not hold its lock (asked at ${witness.at(askedAt)})`);
    };
    const body: Body = ({ signal, fencingToken }) => {
      if (fenced && op.kind === 'plain' && fencingToken !== undefined && !signal.aborted) tokensSeen.push({ name: op.name, token: fencingToken, who });
      return witness
        .inside(
          who,
          resources,
          signal,
          async () => {
            void askRedis(signal);
            if (op.linger) leftBehind.leave(op, who, app, () => bodyOver);
            if (!op.reenter || !innerKind) return sleep(op.bodyMs);
            await sleep(op.bodyMs / 2);
            // A multi-lock re-enters its first member.
            const innerName = op.kind === 'multi' ? NAMES[0] : op.name;
            const inner = kinds.resourcesOf(innerKind, innerName);
            const reentry = op.reenter;
            await kinds
              .runKind(
                app,
                innerKind,
                innerName,
                ({ signal: innerSignal }) => witness.inside(who, inner.resources, innerSignal, () => sleep(reentry.bodyMs), inner.mode),
                { leaseTime: reentry.leaseTime, waitTime: 200 },
              )
              .catch((error: unknown) => {
                // The outer hold may have been lost meanwhile (and its signal told so): a busy re-entry is fine.
                if (!(error instanceof LockError)) unexpected.push(`${who} re-entry: ${String(error)}`);
              });
            await sleep(op.bodyMs / 2);
          },
          mode,
        )
        .finally(() => (bodyOver = true));
    };
    const runOptions: RunOptions = { waitTime: op.waitTime, leaseTime: op.leaseTime, signal: controller?.signal };
    if (op.skipIfLocked) runOptions.skipIfLocked = true;
    await kinds.runKind(app, op.kind, op.name, body, runOptions).catch((error: unknown) => {
      if (error instanceof LockError || (controller && error === controller.signal.reason)) return;
      unexpected.push(`${who}: ${String(error)}`);
    });
  };

  const twice = async (op: TwiceOp, index: number): Promise<void> => {
    const who = `#${index}@${op.instance}`;
    const lock = kinds.lockOf(instances[op.instance], op.kind, op.name);
    const { resources, mode } = kinds.resourcesOf(op.kind, op.name);
    const asked = { waitTime: op.waitTime, leaseTime: op.leaseTime };
    const results = await Promise.allSettled([lock.tryLock(asked), lock.tryLock(asked)]);
    for (const result of results) if (result.status === 'rejected' && !expected(result.reason)) unexpected.push(`${who} tryLock: ${String(result.reason)}`);
    const granted = results.filter((r) => r.status === 'fulfilled' && r.value).length;
    if (granted === 0) return;
    try {
      await witness.inside(who, resources, holdSignal(lock), () => sleep(op.bodyMs), mode);
    } finally {
      for (let i = 0; i < granted; i++)
        await lock.unlock().catch((error: unknown) => {
          if (!expected(error)) unexpected.push(`${who} unlock ${i + 1} of ${granted}: ${String(error)}`);
        });
    }
  };

  /**
   * A hostile call (issue 42): a derived-key name is refused with InvalidLockNameError before anything
   * is sent; an application key is a LockNameConflictError (or, while a fault keeps Redis from
   * answering, could not be asked). Its body never runs.
   */
  const hostile = async (op: HostileOp, index: number): Promise<void> => {
    const who = `#${index}@${op.instance}`;
    const name = kinds.hostileName(op.target);
    let ran = false;
    const outcome = await kinds
      .runNamed(instances[op.instance], op.kind, name, async () => (ran = true), { waitTime: 300 })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    const refused = op.target.shape === 'derived' ? outcome instanceof InvalidLockNameError : outcome instanceof LockNameConflictError;
    const notAsked = op.target.shape === 'app' && (outcome instanceof LockUnavailableError || outcome instanceof LockShutdownError);
    if (ran || !(refused || notAsked)) {
      const got = ran ? 'its body ran' : outcome instanceof Error ? `${outcome.name}: ${outcome.message}` : 'it succeeded';
      unexpected.push(`${who} hostile ${op.kind} on ${JSON.stringify(name)}: expected ${op.target.shape === 'derived' ? 'InvalidLockNameError' : 'LockNameConflictError'}, ${got}`);
    }
    await readCounters();
  };

  const fault = async (op: FaultOp): Promise<void> => {
    ownerModel.faultAt(witness.now());
    if (op.fault === 'stall') return stall(op.ms);
    if (op.fault === 'sigstop') {
      redis.pause();
      await sleep(op.ms);
      return redis.resume();
    }
    // Every connection but the killer's: ioredis reconnects and resends what got no answer.
    await raw.client('KILL', 'TYPE', 'normal').catch(() => undefined);
    await raw.client('KILL', 'TYPE', 'pubsub').catch(() => undefined);
  };

  const restart = async (op: RestartOp): Promise<void> => {
    ownerModel.faultAt(witness.now());
    const old = instances[op.instance];
    const [fresh] = await Promise.all([startTracked(op.instance), old.close()]);
    instances[op.instance] = fresh;
  };

  const attemptStall = (op: AttemptStallOp): void => {
    stalls.push(
      stallAfterAttempt(instances[op.instance].get(LockEngine).client as unknown as Redis, {
        nth: op.nth,
        ms: op.ms,
        times: op.times,
        keyPart: prefix,
        onStall: (from, to) => (stalled.push({ from, to }), trace(`stalled ${Math.round(to - from)}ms after an attempt`)),
      }),
    );
  };

  try {
    const pending = new Set<number | string>(ops.map((_, index) => index));
    const tasks = ops.map((op, index) =>
      sleep(op.at)
        .then(() => {
          switch (op.type) {
            case 'job':
              return job(op, index);
            case 'fault':
              return fault(op);
            case 'restart':
              return restart(op);
            case 'stall-after-attempt':
              return attemptStall(op);
            case 'twice':
              return twice(op, index);
            case 'owner':
              return ownerModel.run(op, index);
            case 'hostile':
              return hostile(op, index);
          }
        })
        .finally(() => pending.delete(index)),
    );
    if (child && schedule.child) {
      const plan = schedule.child;
      pending.add('child');
      tasks.push(
        sleep(plan.at)
          .then(() => runChild(plan, child, redis.url, optionsOf(-1), kinds))
          .finally(() => pending.delete('child')),
      );
    }
    // What bodies left behind may start later still (a timer, an interval's ticks).
    const all = Promise.all(tasks).then(() => Promise.all([leftBehind.settled(), ownerModel.settled()]));
    // Far past every wait, body and fault of a schedule: an op still pending then is a hang.
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([all, new Promise((resolve) => (bound = setTimeout(resolve, SETTLE_BOUND_MS)))]);
    clearTimeout(bound);
    trace('settled');
    redis.resume();
    ownerModel.ledger.settle();
    const broken: string[] = [...pending].map((index) => `did not settle within ${SETTLE_BOUND_MS} ms: ${typeof index === 'number' ? `#${index}` : index}`);
    broken.push(...witness.violations().map((v) => `overlap: ${v}`));
    broken.push(...notGranted.filter((v) => !ownerModel.ledger.excuses(v)).map((v) => `not granted: ${v}`));
    if (child && schedule.child) {
      child.kill();
      broken.push(...brokenAcrossProcesses(witness, stalled, child, schedule.child, kinds));
    }
    broken.push(...unexpected.map((u) => `unexpected error: ${u}`));
    if (hostileChecks) {
      const appAfter = await Promise.all(appKeys.map(({ key }) => snapshot(raw, key)));
      appKeys.forEach(({ key }, i) => {
        if (JSON.stringify(appAfter[i]) !== JSON.stringify(appBefore[i])) {
          broken.push(`application key changed: ${key} was ${JSON.stringify(appBefore[i])}, now ${JSON.stringify(appAfter[i])}`);
        }
      });
      await readCounters();
      for (const [n, readings] of counterReadings) {
        for (let i = 1; i < readings.length; i++) {
          if (readings[i] < readings[i - 1]) broken.push(`fencing counter of ${n} went back: ${readings.join(', ')}`);
        }
        const tokens = tokensSeen.filter((seen) => seen.name === n);
        const last = readings[readings.length - 1] ?? 0;
        for (const seen of tokens) {
          if (tokens.some((other) => other !== seen && other.token === seen.token)) broken.push(`two holds of ${n} got token ${seen.token} (${seen.who})`);
          if (seen.token > last) broken.push(`${seen.who} got token ${seen.token} of ${n}, above its counter ${last}`);
        }
      }
    }
    if (env.layout === 'redisson' && pending.size === 0) {
      // Every attempt answered (a late reply comes within its command timeout) and every grant
      // recorded or given back: nothing left for the hold accounts (docs/redisson-interop.md#hold-counts).
      const open = () => instances.map((app) => holdAccounts(app.get(LockEngine)).size);
      await waitFor(() => open().every((size) => size === 0), { what: 'every hold account to close', timeoutMs: 5_000 }).catch(() =>
        broken.push(`hold accounts still open once everything settled: ${open().join(', ')} (per instance)`),
      );
    }
    const audit = new LayoutAudit(raw, kinds, schedule.redisson?.fencedLocks);
    broken.push(...(await audit.keysWithoutTtl()).map((key) => `key without TTL once everything settled: ${key}`));
    // Every body has ended: what is still held must go within one lease (a failed release's key expires).
    await waitFor(async () => (await audit.held()).length === 0, { what: 'every hold to end', timeoutMs: WATCHDOG * 2 + 1_000 }).catch(async () =>
      broken.push(...(await audit.held()).map(({ key, pttl }) => `still held once everything settled: ${key} (pttl ${pttl})`)),
    );
    trace('checked');
    // Closing goes faster without the delay (every body has ended).
    await relay?.setDelay(0);
    if (broken.length > 0) throw new Error(`${broken.join('\n')}\nschedule:\n${describeSchedule(schedule)}${ownerModel.ledger.timeline()}`);
  } finally {
    for (const timer of timers) clearTimeout(timer);
    for (const stall of stalls) stall.disarm();
    redis.resume();
    child?.kill();
    // Every instance ever started, also one a restart replaced while another restart of its slot ran.
    await Promise.all(started.map((app) => app.close().catch(() => undefined)));
    trace('closed');
    await relay?.stop();
    await child?.exited;
    await raw.flushall();
    trace('done');
  }
}
