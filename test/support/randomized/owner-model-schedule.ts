/**
 * The owner model's ingredients of the randomized hold model (issue 41, DESIGN §24): what a schedule
 * draws besides `scheduleArb`'s ops, and how they read in a failure's report. Each is left out with
 * FC_WITHOUT (all of them: `owner-model`):
 * - `body-objects`: a body makes lock objects (`getLock`, a write view) and continuations use them,
 *   while it runs (a re-entry) or after it ended (an owner of its own);
 * - `siblings`: two continuations on one object made in the body, the first re-entered during the body
 *   and still inside after it, the second asking after the body ended;
 * - `unawaited-nested`: nested runs of the body's lock that the body does not await;
 * - `loss-mid-body`: the body's hold is lost (`loss-del`: its keys deleted, `loss-force`: force-released
 *   by the other instance, `loss-flushall`: FLUSHALL), the body waits to be told or not, then re-enters
 *   through its bound objects or a nested run;
 * - `flows`: two flows on one lock object made outside any body, a loss between the first's lock() and
 *   unlock(), the second locking after it;
 * - contenders: the other instance asks for the lock around and after those (part of each op).
 * A replica promotion is left out: the randomized model runs on one redis-server, and a failover there
 * needs a Sentinel group per schedule (test/support/redis-sentinel.ts), seconds per schedule.
 *
 * A seed draws `scheduleArb`'s part exactly as before (the tuple's first element) and these after it.
 * FC_AIM=owner-model (exploration) draws 2-6 of these ops per schedule instead of 0-2, beside the base
 * draw's jobs only (`aim` below).
 */
import fc from 'fast-check';
import { WITHOUT, scheduleArb, type Name, type Schedule } from './schedule';

export type OwnerKind = 'plain' | 'fair' | 'write';
export type LossHow = 'del' | 'force' | 'flushall';

/** One use of a lock object made in the body, `at` ms after the body entered (maybe after it ended). */
export interface ObjectUse {
  at: number;
  object: 0 | 1;
  /** `lock()` waits without limit (bounded by the schedule's settle bound); `tryLock` waits `waitTime`. */
  how: 'lock' | 'tryLock';
  waitTime: number;
  leaseTime?: number;
  holdMs: number;
}
/** A nested run of the body's lock, started `at` ms after the body entered, never awaited by the body. */
export interface NestedRun {
  at: number;
  waitTime: number;
  leaseTime?: number;
  holdMs: number;
}
/** The body's hold lost behind its back `at` ms after it entered. */
export interface Loss {
  at: number;
  how: LossHow;
  /** The body waits (bounded) until its signal aborted before it goes on. */
  awaitTold: boolean;
  /** What the body does right after: re-enter through its first object, start a nested run, or nothing more. */
  then: 'object' | 'nested' | 'nothing';
  holdMs: number;
  waitTime: number;
}
/** The other instance runs the lock `at` ms after the op began. */
export interface Contender {
  at: number;
  waitTime: number;
  bodyMs: number;
}

interface OwnerOpBase {
  type: 'owner';
  at: number;
  instance: number;
  kind: OwnerKind;
  name: Name;
  leaseTime?: number;
  contenders: Contender[];
  /** This op's line in a failure's report (drawn with it: schedule.ts stays free of this file). */
  label: string;
}
export interface BodyOp extends OwnerOpBase {
  shape: 'body';
  bodyMs: number;
  uses: ObjectUse[];
  nested: NestedRun[];
  loss?: Loss;
}
export interface FlowsOp extends OwnerOpBase {
  shape: 'flows';
  /** Flow A holds this long after its grant, then unlocks. */
  aHoldMs: number;
  /** After A's grant. */
  lossAt: number;
  lossHow: LossHow;
  /** Flow B asks this long after A's grant, waits up to `bWait`, holds `bHoldMs`. */
  bAt: number;
  bWait: number;
  bHoldMs: number;
}
export type OwnerOp = BodyOp | FlowsOp;

const on = (ingredient: string) => !WITHOUT.has(ingredient) && !WITHOUT.has('owner-model');
const LOSSES = (['del', 'force', 'flushall'] as const).filter((how) => on(`loss-${how}`));
const aimed = process.env.FC_AIM === 'owner-model';

const kindArb = fc.constantFrom<OwnerKind>('plain', 'plain', 'fair', 'write');
const nameArb = fc.constantFrom<Name>('a', 'a', 'a', 'b');
/** `arbitrary` with weight `some`, undefined with weight `none`. */
const maybe = <T>(arbitrary: fc.Arbitrary<T>, some: number, none: number): fc.Arbitrary<T | undefined> =>
  fc.oneof({ arbitrary, weight: some }, { arbitrary: fc.constant(undefined), weight: none });
const leaseArb = maybe(fc.integer({ min: 200, max: 900 }), 1, 1);
const lossHowArb = LOSSES.length ? fc.constantFrom(...LOSSES) : fc.constant('del' as const);
const contendersArb = fc.array(
  fc.record({ at: fc.integer({ min: 0, max: 1_800 }), waitTime: fc.integer({ min: 0, max: 1_500 }), bodyMs: fc.integer({ min: 20, max: 300 }) }),
  { minLength: 0, maxLength: 2 },
);
const useArb = (fromMs: number, toMs: number): fc.Arbitrary<ObjectUse> =>
  fc.record({
    at: fc.integer({ min: fromMs, max: toMs }),
    object: fc.constantFrom<0 | 1>(0, 1),
    how: fc.constantFrom('lock' as const, 'tryLock' as const),
    waitTime: fc.integer({ min: 0, max: 800 }),
    leaseTime: leaseArb,
    holdMs: fc.integer({ min: 20, max: 700 }),
  });

const bodyOpArb: fc.Arbitrary<BodyOp> = fc
  .record({
    at: fc.integer({ min: 0, max: 1_500 }),
    instance: fc.integer({ min: 0, max: 1 }),
    kind: kindArb,
    name: nameArb,
    // A third of the bodies with a fixed lease, which often runs out while the body (and its objects) still run.
    leaseTime: maybe(fc.integer({ min: 150, max: 600 }), 1, 2),
    bodyMs: fc.integer({ min: 50, max: 600 }),
    uses: on('body-objects') ? fc.array(useArb(0, 1_200), { maxLength: 3 }) : fc.constant<ObjectUse[]>([]),
    // The first re-enters early and stays past the body's end; the second asks after the body ended.
    siblings: on('siblings')
      ? maybe(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 300, max: 900 }), fc.integer({ min: 10, max: 250 }), fc.integer({ min: 0, max: 600 }), leaseArb), 1, 1)
      : fc.constant(undefined),
    nested: on('unawaited-nested')
      ? fc.array(fc.record({ at: fc.integer({ min: 0, max: 600 }), waitTime: fc.integer({ min: 0, max: 1_500 }), leaseTime: leaseArb, holdMs: fc.integer({ min: 20, max: 600 }) }), { maxLength: 2 })
      : fc.constant<NestedRun[]>([]),
    loss:
      on('loss-mid-body') && LOSSES.length
        ? maybe(
            fc.record({
              at: fc.integer({ min: 0, max: 400 }),
              how: lossHowArb,
              awaitTold: fc.boolean(),
              then: fc.constantFrom('object' as const, 'object' as const, 'nested' as const, 'nothing' as const),
              holdMs: fc.integer({ min: 50, max: 700 }),
              waitTime: fc.integer({ min: 0, max: 1_000 }),
            }),
            1,
            1,
          )
        : fc.constant(undefined),
    contenders: contendersArb,
  })
  .map(({ siblings, ...op }) => {
    const uses = [...op.uses];
    if (siblings) {
      const [firstAt, firstHold, afterEnd, secondWait, leaseTime] = siblings;
      uses.push({ at: firstAt, object: 0, how: 'lock', waitTime: 0, leaseTime, holdMs: op.bodyMs + firstHold });
      uses.push({ at: op.bodyMs + afterEnd, object: 0, how: 'tryLock', waitTime: secondWait, leaseTime, holdMs: 100 });
    }
    const body: BodyOp = { ...op, type: 'owner', shape: 'body', uses, label: '' };
    return { ...body, label: describeBody(body) };
  });

const flowsOpArb: fc.Arbitrary<FlowsOp> = fc
  .record({
    at: fc.integer({ min: 0, max: 1_500 }),
    instance: fc.integer({ min: 0, max: 1 }),
    kind: kindArb,
    name: nameArb,
    leaseTime: leaseArb,
    aHoldMs: fc.integer({ min: 50, max: 700 }),
    lossAt: fc.integer({ min: 0, max: 400 }),
    lossHow: lossHowArb,
    bAt: fc.integer({ min: 0, max: 600 }),
    bWait: fc.integer({ min: 0, max: 800 }),
    bHoldMs: fc.integer({ min: 50, max: 700 }),
    contenders: contendersArb,
  })
  .map((op) => {
    const flows: FlowsOp = { ...op, type: 'owner', shape: 'flows', label: '' };
    return { ...flows, label: describeFlows(flows) };
  });

const ownerOpArbs = [
  ...(on('body-objects') || on('siblings') || on('unawaited-nested') || on('loss-mid-body') ? [{ arbitrary: bodyOpArb as fc.Arbitrary<OwnerOp>, weight: 3 }] : []),
  ...(on('flows') && LOSSES.length ? [{ arbitrary: flowsOpArb as fc.Arbitrary<OwnerOp>, weight: 1 }] : []),
];
const ownerOpsArb: fc.Arbitrary<OwnerOp[]> = ownerOpArbs.length
  ? fc.array(fc.oneof(...ownerOpArbs), aimed ? { minLength: 2, maxLength: 6 } : { minLength: 0, maxLength: 2 })
  : fc.constant<OwnerOp[]>([]);

/**
 * FC_AIM=owner-model keeps of `scheduleArb`'s draw only its jobs (contenders, re-entries, lingering
 * continuations): no faults, restarts, stalls, relay or child, which cost time and hide object holds.
 */
const aim = (schedule: Schedule): Schedule =>
  aimed ? { ops: schedule.ops.filter((op) => op.type === 'job'), waiterTimeout: schedule.waiterTimeout } : schedule;

/** Layout 'native': `scheduleArb`'s schedule (drawn first, as alone) with the owner model's ops merged in by time. */
export const ownerModelScheduleArb: fc.Arbitrary<Schedule> = fc
  .tuple(scheduleArb.map(aim), ownerOpsArb)
  .map(([schedule, extra]) => (extra.length === 0 ? schedule : { ...schedule, ops: [...schedule.ops, ...extra].sort((x, y) => x.at - y.at) }));

const lease = (leaseTime?: number) => (leaseTime === undefined ? 'watchdog' : `lease ${leaseTime}`);
const contenderText = (cs: Contender[]) => cs.map((c) => `other instance runs it at +${c.at}ms (wait ${c.waitTime}, body ${c.bodyMs}ms)`);

function describeBody(op: BodyOp): string {
  const parts = [
    `owner-model body: ${op.kind} ${op.name} ${lease(op.leaseTime)} body ${op.bodyMs}ms, makes 2 lock objects`,
    ...op.uses.map((u) => `object ${u.object} ${u.how}${u.how === 'tryLock' ? ` wait ${u.waitTime}` : ''} (${lease(u.leaseTime)}) at +${u.at}ms, holds ${u.holdMs}ms`),
    ...op.nested.map((n) => `unawaited nested run at +${n.at}ms (wait ${n.waitTime}, ${lease(n.leaseTime)}, body ${n.holdMs}ms)`),
    ...(op.loss
      ? [`loss at +${op.loss.at}ms: ${op.loss.how}${op.loss.awaitTold ? ', waits to be told' : ''}, then ${op.loss.then} (wait ${op.loss.waitTime}, holds ${op.loss.holdMs}ms)`]
      : []),
    ...contenderText(op.contenders),
  ];
  return parts.join('; ');
}

function describeFlows(op: FlowsOp): string {
  return [
    `owner-model flows: ${op.kind} ${op.name} one lock object (${lease(op.leaseTime)}), flow A locks and holds ${op.aHoldMs}ms`,
    `loss ${op.lossHow} at A+${op.lossAt}ms`,
    `flow B asks at A+${op.bAt}ms (wait ${op.bWait}), holds ${op.bHoldMs}ms`,
    ...contenderText(op.contenders),
  ].join('; ');
}
