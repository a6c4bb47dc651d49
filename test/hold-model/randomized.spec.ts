/**
 * Model-based randomized test of the hold model: random schedules of locked bodies of every kind
 * (plain, fair, read, write, multi, semaphore) on two module instances of one real Redis, with
 * re-entry (a shorter lease, a read inside a write), fixed and watchdog leases, aborted callers,
 * `skipIfLocked`, an instance shut down and replaced, and injected faults (Redis frozen with
 * SIGSTOP, CLIENT KILL, this process's event loop stalled). The model is the witness: two holders
 * may be inside one lock at once only if the earlier one's signal aborted before the later entered.
 * Once everything settled, nothing is held and no key is left without a TTL.
 *
 * A fixed seed and number of runs run in CI. A failure prints its seed, path and schedule; replay it:
 *   FC_SEED=<seed> FC_PATH=<path> npx jest test/hold-model/randomized.spec.ts
 * The schedule replays exactly, its timing only roughly: a case found under a stalled event loop or a
 * frozen Redis may need a few tries (FC_REPEAT=10 replays it until it fails, up to 10 times).
 * Explore more: FC_RUNS=400 FC_TIME_LIMIT_MS=420000 FC_SEED=$RANDOM npx jest test/hold-model/randomized.spec.ts
 * (the run stops at FC_TIME_LIMIT_MS, 150 s by default, and prints how many schedules it ran)
 * Shrink a failure to a smaller schedule (slow: every step replays real timing): add FC_SHRINK=1.
 * Look past the commonest finding (a body outliving its fixed lease): add FC_BODIES=within-lease.
 */
import fc from 'fast-check';
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import {
  FairLockService,
  LockError,
  LockService,
  ReadWriteLockService,
  SemaphoreService,
  type LockModuleOptions,
  type LockRunContext,
  type RunOptions,
} from '../../lib';
import { stallEventLoop } from '../support/event-loop';
import { HoldWitness, type VisitMode } from '../support/hold-witness';
import { isHoldKey, keysWithoutTtl, keysWithTtl } from '../support/key-audit';
import { createLockApp, sleep } from '../support/lock-app';
import { RestartableRedis } from '../support/restartable-redis';
import { waitFor } from '../support/wait-for';

const KINDS = ['plain', 'fair', 'read', 'write', 'multi', 'semaphore'] as const;
type Kind = (typeof KINDS)[number];
const NAMES = ['a', 'b'] as const;
const INSTANCES = 2;
const WATCHDOG = 900; // renewed every 300 ms
const COMMAND_TIMEOUT = 300;
const SETTLE_BOUND_MS = 20_000;
/** A bound on the whole property run (a 2-core CI machine); FC_TIME_LIMIT_MS for longer explorations. */
const TIME_LIMIT_MS = Number(process.env.FC_TIME_LIMIT_MS ?? 150_000);

interface Reentry {
  /** A fixed lease for the inner hold (shorter than the outer one's, often); none: the watchdog. */
  leaseTime?: number;
  bodyMs: number;
  /** Inside a write: re-enter as a read (a downgrade). */
  asRead: boolean;
}

interface JobOp {
  type: 'job';
  at: number;
  instance: number;
  kind: Kind;
  name: (typeof NAMES)[number];
  leaseTime?: number;
  bodyMs: number;
  waitTime: number;
  skipIfLocked: boolean;
  abortAfter?: number;
  reenter?: Reentry;
}
interface FaultOp {
  type: 'fault';
  at: number;
  fault: 'sigstop' | 'client-kill' | 'stall';
  ms: number;
}
interface RestartOp {
  type: 'restart';
  at: number;
  instance: number;
}
type Op = JobOp | FaultOp | RestartOp;

const jobArb: fc.Arbitrary<Op> = fc.record({
  type: fc.constant('job' as const),
  at: fc.integer({ min: 0, max: 1_500 }),
  instance: fc.integer({ min: 0, max: INSTANCES - 1 }),
  kind: fc.constantFrom(...KINDS),
  name: fc.constantFrom(...NAMES),
  leaseTime: fc.option(fc.integer({ min: 100, max: 400 }), { nil: undefined }),
  bodyMs: fc.integer({ min: 20, max: 600 }),
  waitTime: fc.integer({ min: 0, max: 1_500 }),
  skipIfLocked: fc.boolean(),
  abortAfter: fc.option(fc.integer({ min: 0, max: 800 }), { nil: undefined, freq: 4 }),
  reenter: fc.option(
    fc.record({
      leaseTime: fc.option(fc.integer({ min: 100, max: 400 }), { nil: undefined }),
      bodyMs: fc.integer({ min: 0, max: 400 }),
      asRead: fc.boolean(),
    }),
    { nil: undefined, freq: 2 },
  ),
});
/**
 * `FC_BODIES=within-lease` (exploration): every body ends well within its own fixed lease, so a
 * fixed lease that runs out under a body (the commonest finding) cannot be what a schedule finds.
 */
const withinLease = process.env.FC_BODIES === 'within-lease';
const jobOpArb: fc.Arbitrary<Op> = withinLease
  ? jobArb.map((op) => {
      const job = op as JobOp;
      if (job.leaseTime === undefined) return job;
      // The outer body, re-entry included, fits half its lease; an inner hold may still outlive its own.
      const budget = Math.floor(job.leaseTime / 2);
      const bodyMs = Math.min(job.bodyMs, budget);
      return { ...job, bodyMs, reenter: job.reenter && { ...job.reenter, bodyMs: Math.min(job.reenter.bodyMs, budget - bodyMs) } };
    })
  : jobArb;
const faultArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ type: fc.constant('fault' as const), at: fc.integer({ min: 0, max: 1_500 }), fault: fc.constant('sigstop' as const), ms: fc.integer({ min: 100, max: 700 }) }),
  fc.record({ type: fc.constant('fault' as const), at: fc.integer({ min: 0, max: 1_500 }), fault: fc.constant('client-kill' as const), ms: fc.constant(0) }),
  fc.record({ type: fc.constant('fault' as const), at: fc.integer({ min: 0, max: 1_500 }), fault: fc.constant('stall' as const), ms: fc.integer({ min: 100, max: 500 }) }),
);
const restartArb: fc.Arbitrary<Op> = fc.record({
  type: fc.constant('restart' as const),
  at: fc.integer({ min: 0, max: 1_500 }),
  instance: fc.integer({ min: 0, max: INSTANCES - 1 }),
});
const scheduleArb = fc
  .array(fc.oneof({ arbitrary: jobOpArb, weight: 8 }, { arbitrary: faultArb, weight: 2 }, { arbitrary: restartArb, weight: 2 }), {
    minLength: 3,
    maxLength: 12,
  })
  .map((ops) => [...ops].sort((x, y) => x.at - y.at));

/** One line per op, for a failure's report. */
function describeOp(op: Op, index: number): string {
  if (op.type === 'fault') return `#${index} +${op.at}ms fault ${op.fault}${op.ms ? ` ${op.ms}ms` : ''}`;
  if (op.type === 'restart') return `#${index} +${op.at}ms shut down instance ${op.instance} and start a new one`;
  const lease = op.leaseTime === undefined ? 'watchdog' : `lease ${op.leaseTime}`;
  const extras = [
    op.skipIfLocked ? 'skipIfLocked' : '',
    op.abortAfter !== undefined ? `abort +${op.abortAfter}ms` : '',
    op.reenter ? `re-enter${op.reenter.asRead ? ' as read' : ''} (${op.reenter.leaseTime === undefined ? 'watchdog' : `lease ${op.reenter.leaseTime}`}, ${op.reenter.bodyMs}ms)` : '',
  ].filter(Boolean);
  return `#${index} +${op.at}ms instance ${op.instance} ${op.kind} ${op.kind === 'multi' ? 'a+b' : op.name} ${lease} body ${op.bodyMs}ms wait ${op.waitTime}ms ${extras.join(' ')}`.trim();
}

/** The witness's resources of a kind: plain and fair share one key (they exclude each other), as do a multi-lock's members. */
function resourcesOf(kind: Kind, name: string, prefix: string): { resources: string[]; mode: VisitMode } {
  switch (kind) {
    case 'plain':
    case 'fair':
      return { resources: [`lock:${prefix}${name}`], mode: 'exclusive' };
    case 'multi':
      return { resources: NAMES.map((n) => `lock:${prefix}${n}`), mode: 'exclusive' };
    case 'read':
      return { resources: [`rw:${prefix}${name}`], mode: 'shared' };
    case 'write':
      return { resources: [`rw:${prefix}${name}`], mode: 'exclusive' };
    case 'semaphore':
      return { resources: [`sem:${prefix}${name}`], mode: 'exclusive' };
  }
}

type Body = (context: LockRunContext) => Promise<unknown>;

/** `run` of a kind through its public service. */
function runKind(app: TestingModule, kind: Kind, name: string, prefix: string, body: Body, options: RunOptions): Promise<unknown> {
  switch (kind) {
    case 'plain':
      return app.get(LockService).run(prefix + name, body, options);
    case 'fair':
      return app.get(FairLockService).run(prefix + name, body, options);
    case 'read':
      return app.get(ReadWriteLockService).runRead(prefix + name, body, options);
    case 'write':
      return app.get(ReadWriteLockService).runWrite(prefix + name, body, options);
    case 'multi':
      return app.get(LockService).run(NAMES.map((n) => prefix + n), body, options);
    case 'semaphore':
      return app.get(SemaphoreService).run(prefix + name, body, { permits: 1, ...options });
  }
}

/** What a re-entry inside a body of `kind` takes: the same lock, a member of the multi-lock, a read inside a write. */
function reentryKind(kind: Kind, reentry: Reentry): Kind | undefined {
  if (kind === 'semaphore') return undefined; // permits are not re-entered
  if (kind === 'multi') return 'plain';
  if (kind === 'write' && reentry.asRead) return 'read';
  return kind;
}

describe('hold model: randomized schedules across two instances', () => {
  let redis: RestartableRedis;
  let raw: Redis;
  let runSeq = 0;
  const options = (): LockModuleOptions => ({ redis: redis.url, watchdogTimeout: WATCHDOG, commandTimeout: COMMAND_TIMEOUT });

  beforeAll(async () => {
    redis = await RestartableRedis.start();
    raw = redis.client();
  });
  afterAll(async () => {
    redis?.resume();
    await redis?.dispose();
  });

  /** A new module instance, retried while a fault keeps Redis from answering its bootstrap. */
  async function startInstance(): Promise<TestingModule> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await createLockApp(options());
      } catch (error) {
        if (attempt >= 20) throw error;
        await sleep(100);
      }
    }
  }

  /** Runs one schedule; throws with every broken promise it saw. */
  async function runSchedule(ops: Op[]): Promise<void> {
    const prefix = `r${++runSeq}-`;
    const witness = new HoldWitness();
    const started: TestingModule[] = [];
    const startTracked = async (): Promise<TestingModule> => {
      const app = await startInstance();
      started.push(app);
      return app;
    };
    const instances = await Promise.all(Array.from({ length: INSTANCES }, () => startTracked()));
    const unexpected: string[] = [];
    const timers: NodeJS.Timeout[] = [];

    const job = async (op: JobOp, index: number): Promise<void> => {
      const app = instances[op.instance];
      const who = `#${index}@${op.instance}`;
      const controller = op.abortAfter === undefined ? undefined : new AbortController();
      if (controller) timers.push(setTimeout(() => controller.abort(new Error(`${who} gave up`)), op.abortAfter));
      const { resources, mode } = resourcesOf(op.kind, op.name, prefix);
      const innerKind = op.reenter && reentryKind(op.kind, op.reenter);
      const body: Body = ({ signal }) =>
        witness.inside(
          who,
          resources,
          signal,
          async () => {
            if (!op.reenter || !innerKind) return sleep(op.bodyMs);
            await sleep(op.bodyMs / 2);
            // A multi-lock re-enters its first member.
            const innerName = op.kind === 'multi' ? NAMES[0] : op.name;
            const inner = resourcesOf(innerKind, innerName, prefix);
            const reentry = op.reenter;
            await runKind(
              app,
              innerKind,
              innerName,
              prefix,
              ({ signal: innerSignal }) => witness.inside(who, inner.resources, innerSignal, () => sleep(reentry.bodyMs), inner.mode),
              { leaseTime: reentry.leaseTime, waitTime: 200 },
            ).catch((error: unknown) => {
              // The outer hold may have been lost meanwhile (and its signal told so): a busy re-entry is fine.
              if (!(error instanceof LockError)) unexpected.push(`${who} re-entry: ${String(error)}`);
            });
            await sleep(op.bodyMs / 2);
          },
          mode,
        );
      const runOptions: RunOptions = { waitTime: op.waitTime, leaseTime: op.leaseTime, signal: controller?.signal };
      if (op.skipIfLocked) runOptions.skipIfLocked = true;
      await runKind(app, op.kind, op.name, prefix, body, runOptions).catch((error: unknown) => {
        if (error instanceof LockError || (controller && error === controller.signal.reason)) return;
        unexpected.push(`${who}: ${String(error)}`);
      });
    };

    const fault = async (op: FaultOp): Promise<void> => {
      if (op.fault === 'stall') return stallEventLoop(op.ms);
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
      const old = instances[op.instance];
      const [fresh] = await Promise.all([startTracked(), old.close()]);
      instances[op.instance] = fresh;
    };

    try {
      const pending = new Set(ops.map((_, index) => index));
      const all = Promise.all(
        ops.map((op, index) =>
          sleep(op.at)
            .then(() => (op.type === 'job' ? job(op, index) : op.type === 'fault' ? fault(op) : restart(op)))
            .finally(() => pending.delete(index)),
        ),
      );
      // Far past every wait, body and fault of a schedule: an op still pending then is a hang.
      let bound: NodeJS.Timeout | undefined;
      await Promise.race([all, new Promise((resolve) => (bound = setTimeout(resolve, SETTLE_BOUND_MS)))]);
      clearTimeout(bound);
      redis.resume();
      const broken: string[] = [...pending].map((index) => `did not settle within ${SETTLE_BOUND_MS} ms: #${index}`);
      broken.push(...witness.violations().map((v) => `overlap: ${v}`));
      broken.push(...unexpected.map((u) => `unexpected error: ${u}`));
      broken.push(...(await keysWithoutTtl(raw)).map((key) => `key without TTL once everything settled: ${key}`));
      // Every body has ended: what is still held must go within one lease (a failed release's key expires).
      const held = async () => (await keysWithTtl(raw)).filter(({ key }) => isHoldKey(key));
      await waitFor(async () => (await held()).length === 0, { what: 'every hold to end', timeoutMs: WATCHDOG * 2 + 1_000 }).catch(async () =>
        broken.push(...(await held()).map(({ key, pttl }) => `still held once everything settled: ${key} (pttl ${pttl})`)),
      );
      if (broken.length > 0) throw new Error(`${broken.join('\n')}\nschedule:\n${ops.map(describeOp).join('\n')}`);
    } finally {
      for (const timer of timers) clearTimeout(timer);
      redis.resume();
      // Every instance ever started, also one a restart replaced while another restart of its slot ran.
      await Promise.all(started.map((app) => app.close().catch(() => undefined)));
      await raw.flushall();
    }
  }

  it(
    'no second holder while a body runs with a live signal, and nothing held once everything settled',
    async () => {
      const path = process.env.FC_PATH;
      const check = () =>
        fc.check(
          fc.asyncProperty(scheduleArb, (ops) => runSchedule(ops)),
          {
            seed: Number(process.env.FC_SEED ?? 23_2026),
            path,
            numRuns: Number(process.env.FC_RUNS ?? (path ? 1 : 40)),
            endOnFailure: !process.env.FC_SHRINK,
            // A bound on the whole run (a 2-core CI machine): the cases run so far still count.
            interruptAfterTimeLimit: TIME_LIMIT_MS,
          },
        );
      // The schedule replays exactly; its timing does not, so a replay may ask for a few tries.
      let details = await check();
      for (let tries = Number(process.env.FC_REPEAT ?? 1); !details.failed && tries > 1; tries--) details = await check();
      // How much was explored (a run cut short by the time limit still passed what it ran).
      process.stdout.write(`randomized hold model: seed ${details.seed}, ${details.numRuns} schedules${details.interrupted ? ' (time limit reached)' : ''}\n`);
      if (details.failed) {
        const replay = `FC_SEED=${details.seed} FC_PATH=${details.counterexamplePath} npx jest test/hold-model/randomized.spec.ts`;
        const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
        throw new Error(`${cause}\n\n${fc.defaultReportMessage(details)}\n\nReplay: ${replay}`);
      }
    },
    TIME_LIMIT_MS + 90_000,
  );
});
