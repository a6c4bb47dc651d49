/**
 * The randomized hold model's schedules (test/hold-model/randomized.spec.ts): what a schedule is, its
 * fast-check arbitraries and its one-line-per-op description. Independent of the layout: a seed draws
 * the same schedules in layout 'native' as before this moved here, and the same ones again in layout
 * 'redisson' (`redissonScheduleArb`, which adds that layout's own options).
 */
import fc from 'fast-check';
// Type only: owner-model-schedule.ts builds on this file, never the other way round at run time.
import type { OwnerOp } from './owner-model-schedule';

export const KINDS = ['plain', 'fair', 'read', 'write', 'multi', 'semaphore'] as const;
export type Kind = (typeof KINDS)[number];
export const NAMES = ['a', 'b'] as const;
export type Name = (typeof NAMES)[number];
export const INSTANCES = 2;

/**
 * Ingredients left out (FC_WITHOUT=relay,stall-after-attempt,short-grants,linger,child,twice; the owner
 * model's: owner-model-schedule.ts).
 */
export const WITHOUT = new Set((process.env.FC_WITHOUT ?? '').split(',').filter(Boolean));

export interface Reentry {
  /** A fixed lease for the inner hold (shorter than the outer one's, often); none: the watchdog. */
  leaseTime?: number;
  bodyMs: number;
  /** Inside a write: re-enter as a read (a downgrade). */
  asRead: boolean;
}

/** Continuations a body leaves behind that ask for the same lock (often after the body ended). */
export interface Linger {
  how: 'timeout' | 'interval' | 'promise' | 'getLock';
  /** After the body entered. */
  delayMs: number;
  /** Calls made (an interval's ticks, or that many timers/promises/getLocks). */
  calls: number;
  /** Between two calls. */
  everyMs: number;
  bodyMs: number;
  skipIfLocked: boolean;
  waitTime: number;
}

export interface JobOp {
  type: 'job';
  at: number;
  instance: number;
  kind: Kind;
  name: Name;
  leaseTime?: number;
  bodyMs: number;
  waitTime: number;
  skipIfLocked: boolean;
  abortAfter?: number;
  reenter?: Reentry;
  linger?: Linger;
}
export interface FaultOp {
  type: 'fault';
  at: number;
  fault: 'sigstop' | 'client-kill' | 'stall';
  ms: number;
}
export interface RestartOp {
  type: 'restart';
  at: number;
  instance: number;
}
/** From `at`, the `nth` acquiring attempt `instance` writes is followed by an event-loop stall of `ms`. */
export interface AttemptStallOp {
  type: 'stall-after-attempt';
  at: number;
  instance: number;
  nth: number;
  ms: number;
  /** Stalls after every `nth` attempt, this many times. */
  times: number;
}
/** One lock object, two acquisitions at once, then as many unlocks as were granted. */
export interface TwiceOp {
  type: 'twice';
  at: number;
  instance: number;
  kind: 'plain' | 'fair';
  name: Name;
  leaseTime?: number;
  bodyMs: number;
  waitTime: number;
}
/**
 * Layout 'redisson' only (issue 42): a call of `kind` on a hostile name, which must be refused and
 * change nothing: a name shaped like a derived key of the schedule's own locks (`derived`: one of
 * `HOSTILE_SHAPES`, around lock `name`), refused with InvalidLockNameError; or an application key of
 * some type (`app`: one of `APP_KEY_COUNT`, written before the schedule), a LockNameConflictError.
 */
export interface HostileOp {
  type: 'hostile';
  at: number;
  instance: number;
  kind: Kind;
  target: { shape: 'derived'; which: number; name: Name } | { shape: 'app'; which: number };
}
export type Op = JobOp | FaultOp | RestartOp | AttemptStallOp | TwiceOp | OwnerOp | HostileOp;

/** How many derived-key shapes and application keys a hostile op draws from (test/support/randomized/kinds.ts lists them). */
export const HOSTILE_SHAPES = 12;
export const APP_KEY_COUNT = 8;

/** A child process with many waiters on one lock, killed or stopped mid-line. */
export interface ChildPlan {
  at: number;
  kind: 'plain' | 'fair';
  name: Name;
  waiters: number;
  bodyMs: number;
  waitTime: number;
  action: 'kill' | 'stop';
  /** After `at`. */
  actAfter: number;
  stopMs: number;
}

export interface Schedule {
  /** One instance behind a delay relay of `oneWayMs` per way. */
  relay?: { instance: number; oneWayMs: number };
  /** `fairLockWaiterTimeout` (short grant leases); none: the default. */
  waiterTimeout?: number;
  child?: ChildPlan;
  ops: Op[];
  /** Layout 'redisson' only: the schedule's `redisson` options. */
  redisson?: { fencedLocks: boolean };
}

/** Names: `a` more often, so that three or more parties meet in one line (a hand-off's races need a holder, a waiter and a third). */
const nameArb: fc.Arbitrary<Name> = fc.constantFrom<Name>('a', 'a', 'a', 'b');

/** `arbitrary` with weight `some`, undefined with weight `none`. */
const sometimes = <T>(arbitrary: fc.Arbitrary<T>, some: number, none: number): fc.Arbitrary<T | undefined> =>
  fc.oneof({ arbitrary, weight: some }, { arbitrary: fc.constant(undefined), weight: none });

const lingerArb: fc.Arbitrary<Linger> = fc.record({
  how: fc.constantFrom('timeout' as const, 'interval' as const, 'promise' as const, 'getLock' as const),
  delayMs: fc.integer({ min: 0, max: 700 }),
  calls: fc.integer({ min: 1, max: 3 }),
  everyMs: fc.integer({ min: 20, max: 300 }),
  bodyMs: fc.integer({ min: 20, max: 400 }),
  skipIfLocked: fc.boolean(),
  waitTime: fc.integer({ min: 0, max: 600 }),
});

const jobArb: fc.Arbitrary<Op> = fc.record({
  type: fc.constant('job' as const),
  at: fc.integer({ min: 0, max: 1_500 }),
  instance: fc.integer({ min: 0, max: INSTANCES - 1 }),
  kind: fc.constantFrom(...KINDS),
  name: nameArb,
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
  linger: WITHOUT.has('linger') ? fc.constant(undefined) : sometimes(lingerArb, 1, 2),
});
/**
 * `FC_BODIES=within-lease` (exploration): every body ends well within its own fixed lease, so a
 * fixed lease that runs out under a body (the commonest finding) cannot be what a schedule finds.
 */
const withinLease = process.env.FC_BODIES === 'within-lease';
const fitLease = <T extends { leaseTime?: number; bodyMs: number }>(op: T): T =>
  op.leaseTime === undefined ? op : { ...op, bodyMs: Math.min(op.bodyMs, Math.floor(op.leaseTime / 2)) };
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
const attemptStallArb: fc.Arbitrary<Op> = fc.record({
  type: fc.constant('stall-after-attempt' as const),
  at: fc.integer({ min: 0, max: 1_500 }),
  instance: fc.integer({ min: 0, max: INSTANCES - 1 }),
  nth: fc.integer({ min: 1, max: 3 }),
  ms: fc.integer({ min: 100, max: 900 }),
  times: fc.integer({ min: 1, max: 4 }),
});
const twiceArb: fc.Arbitrary<Op> = fc
  .record({
    type: fc.constant('twice' as const),
    at: fc.integer({ min: 0, max: 1_500 }),
    instance: fc.integer({ min: 0, max: INSTANCES - 1 }),
    kind: fc.constantFrom('plain' as const, 'fair' as const),
    name: nameArb,
    leaseTime: fc.option(fc.integer({ min: 100, max: 400 }), { nil: undefined }),
    bodyMs: fc.integer({ min: 20, max: 600 }),
    waitTime: fc.integer({ min: 0, max: 1_500 }),
  })
  .map((op) => (withinLease ? fitLease(op) : op));
const childArb: fc.Arbitrary<ChildPlan> = fc.record({
  at: fc.integer({ min: 0, max: 1_000 }),
  kind: fc.constantFrom('plain' as const, 'fair' as const),
  name: nameArb,
  waiters: fc.integer({ min: 3, max: 6 }),
  bodyMs: fc.integer({ min: 20, max: 200 }),
  waitTime: fc.integer({ min: 500, max: 3_000 }),
  action: fc.constantFrom('kill' as const, 'stop' as const),
  actAfter: fc.integer({ min: 50, max: 1_500 }),
  stopMs: fc.integer({ min: 200, max: 1_500 }),
});
const opArbs: Array<{ arbitrary: fc.Arbitrary<Op>; weight: number }> = [
  { arbitrary: jobOpArb, weight: 8 },
  { arbitrary: faultArb, weight: 2 },
  { arbitrary: restartArb, weight: 1 },
  ...(WITHOUT.has('stall-after-attempt') ? [] : [{ arbitrary: attemptStallArb, weight: 2 }]),
  ...(WITHOUT.has('twice') ? [] : [{ arbitrary: twiceArb, weight: 1 }]),
];
export const scheduleArb: fc.Arbitrary<Schedule> = fc.record({
  relay: WITHOUT.has('relay')
    ? fc.constant(undefined)
    : sometimes(fc.record({ instance: fc.integer({ min: 0, max: INSTANCES - 1 }), oneWayMs: fc.integer({ min: 20, max: 280 }) }), 2, 1),
  waiterTimeout: WITHOUT.has('short-grants') ? fc.constant(undefined) : sometimes(fc.integer({ min: 250, max: 700 }), 1, 1),
  // A third of the schedules: a child costs ~2 s of CPU to start (ts-node), started ahead of its schedule.
  child: WITHOUT.has('child') ? fc.constant(undefined) : sometimes(childArb, 1, 2),
  ops: fc
    .array(fc.oneof(...opArbs), { minLength: 3, maxLength: 12 })
    .map((ops) => [...ops].sort((x, y) => x.at - y.at)),
});

const hostileArb: fc.Arbitrary<HostileOp> = fc.record({
  type: fc.constant('hostile' as const),
  at: fc.integer({ min: 0, max: 1_500 }),
  instance: fc.integer({ min: 0, max: INSTANCES - 1 }),
  kind: fc.constantFrom(...KINDS),
  target: fc.oneof(
    fc.record({ shape: fc.constant('derived' as const), which: fc.integer({ min: 0, max: HOSTILE_SHAPES - 1 }), name: nameArb }),
    fc.record({ shape: fc.constant('app' as const), which: fc.integer({ min: 0, max: APP_KEY_COUNT - 1 }) }),
  ),
});

/**
 * Layout 'redisson': the same schedules (the first element draws as `scheduleArb` alone does), plus
 * whether plain locks are Redisson's fenced locks (every acquisition increments a counter), plus
 * hostile calls (issue 42) mixed among the ops: names shaped like the schedule's own derived keys,
 * and application keys of every type.
 */
export const redissonScheduleArb: fc.Arbitrary<Schedule> = fc
  .tuple(scheduleArb, fc.boolean(), fc.array(hostileArb, { minLength: 1, maxLength: 4 }))
  .map(([schedule, fencedLocks, hostile]) => ({
    ...schedule,
    ops: [...schedule.ops, ...hostile].sort((x, y) => x.at - y.at),
    redisson: { fencedLocks },
  }));

/** One line per op, for a failure's report. */
function describeOp(op: Op, index: number): string {
  const lease = (leaseTime?: number) => (leaseTime === undefined ? 'watchdog' : `lease ${leaseTime}`);
  if (op.type === 'fault') return `#${index} +${op.at}ms fault ${op.fault}${op.ms ? ` ${op.ms}ms` : ''}`;
  if (op.type === 'restart') return `#${index} +${op.at}ms shut down instance ${op.instance} and start a new one`;
  if (op.type === 'stall-after-attempt') return `#${index} +${op.at}ms instance ${op.instance}: stall ${op.ms}ms right after every ${op.nth}${op.nth === 1 ? 'st' : op.nth === 2 ? 'nd' : 'rd'} acquiring attempt from now, ${op.times}x`;
  if (op.type === 'owner') return `#${index} +${op.at}ms instance ${op.instance} ${op.label}`;
  if (op.type === 'hostile') {
    const target = op.target.shape === 'derived' ? `derived-key shape ${op.target.which} of ${op.target.name}` : `application key ${op.target.which}`;
    return `#${index} +${op.at}ms instance ${op.instance} hostile ${op.kind} on ${target}`;
  }
  if (op.type === 'twice') return `#${index} +${op.at}ms instance ${op.instance} ${op.kind} ${op.name} twice on one lock object ${lease(op.leaseTime)} body ${op.bodyMs}ms wait ${op.waitTime}ms`;
  const linger = op.linger;
  const extras = [
    op.skipIfLocked ? 'skipIfLocked' : '',
    op.abortAfter !== undefined ? `abort +${op.abortAfter}ms` : '',
    op.reenter ? `re-enter${op.reenter.asRead ? ' as read' : ''} (${lease(op.reenter.leaseTime)}, ${op.reenter.bodyMs}ms)` : '',
    linger
      ? `linger: ${linger.calls}x ${linger.how} from +${linger.delayMs}ms every ${linger.everyMs}ms (body ${linger.bodyMs}ms, ${linger.skipIfLocked ? 'skipIfLocked' : `wait ${linger.waitTime}ms`})`
      : '',
  ].filter(Boolean);
  return `#${index} +${op.at}ms instance ${op.instance} ${op.kind} ${op.kind === 'multi' ? 'a+b' : op.name} ${lease(op.leaseTime)} body ${op.bodyMs}ms wait ${op.waitTime}ms ${extras.join(' ')}`.trim();
}

export function describeSchedule(schedule: Schedule): string {
  const lines = [
    `network: ${schedule.relay ? `instance ${schedule.relay.instance} behind a delay relay of ${schedule.relay.oneWayMs}ms per way` : 'loopback'}`,
    `fairLockWaiterTimeout: ${schedule.waiterTimeout ?? 'default'}`,
  ];
  if (schedule.redisson) lines.push(`layout 'redisson'${schedule.redisson.fencedLocks ? ', fencedLocks' : ''}`);
  const c = schedule.child;
  if (c)
    lines.push(
      `child: +${c.at}ms ${c.waiters} ${c.kind} waiters on ${c.name} (body ${c.bodyMs}ms, wait ${c.waitTime}ms), ` +
        `${c.action === 'kill' ? 'SIGKILL' : `SIGSTOP for ${c.stopMs}ms`} at +${c.at + c.actAfter}ms`,
    );
  return [...lines, ...schedule.ops.map(describeOp)].join('\n');
}
