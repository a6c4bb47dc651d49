/**
 * Runs the owner model's ops (owner-model-schedule.ts) in a schedule of the randomized hold model: a
 * body that makes lock objects and leaves continuations and nested runs behind, loses its hold and
 * re-enters; two flows on one lock object with a loss between; the other instance contending. Who
 * holds and what counts as told for what they hold: owner-model-witness.ts.
 */
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockError, ReadWriteLockService, type Lock } from '../../../lib';
import { LockKeys } from '../../../lib/redis/lock-keys';
import type { HoldWitness } from '../hold-witness';
import { sleep } from '../lock-app';
import { waitFor } from '../wait-for';
import type { LayoutKinds } from './kinds';
import { OwnerModelLedger } from './owner-model-witness';
import type { BodyOp, Contender, FlowsOp, LossHow, NestedRun, ObjectUse, OwnerKind, OwnerOp } from './owner-model-schedule';
import type { Name } from './schedule';

/** `lock()` waits without limit: bounded here so a hold nobody releases shows as an overlap, not a hang. */
const LOCK_WAIT_BOUND_MS = 4_000;
const KEYS = new LockKeys('lock:');
const leaseDriftMs = (leaseMs: number) => Math.floor(leaseMs / 100) + 2;

export interface OwnerModelContext {
  kinds: LayoutKinds;
  witness: HoldWitness;
  raw: Redis;
  /** The schedule's instances (a restart replaces an entry). */
  instances: TestingModule[];
  timers: NodeJS.Timeout[];
  unexpected: string[];
  watchdogMs: number;
  relayedInstance?: number;
  /** A child process holds locks too: FLUSHALL would end its holds unseen, so losses are DELs then. */
  hasChild: boolean;
  /** When this process's event loop stood still (the schedule's record, filled as it runs). */
  stalled: ReadonlyArray<{ from: number }>;
}

/** What a body's grants are decided by (owner-model-witness.ts). */
interface BodyState {
  running: boolean;
  lost: boolean;
  signal?: AbortSignal;
}
/**
 * Whether what asks now counts on the body's hold: decided when it asks (DESIGN §24), not when it is
 * granted (a stalled event loop may handle a re-entry's grant after the body ended).
 */
const reentering = (state: BodyState): boolean => state.running && !state.lost && state.signal?.aborted === false;

export class OwnerModelOps {
  /** Losses, faults and this file's visits, for the witness (owner-model-witness.ts). */
  readonly ledger: OwnerModelLedger;
  private readonly calls: Array<Promise<void>> = [];
  private unfired = 0;

  constructor(private readonly ctx: OwnerModelContext) {
    this.ledger = new OwnerModelLedger(ctx.witness, ctx.stalled);
  }

  run(op: OwnerOp, index: number): Promise<void> {
    const who = `#${index}@${op.instance}`;
    for (const [k, contender] of op.contenders.entries()) this.later(contender.at, () => this.contend(op, contender, `${who}/c${k}`));
    return op.shape === 'body' ? this.body(op, who) : this.flows(op, who);
  }

  /** A fault began (Redis frozen, connections killed, an instance shut down): object holds count as told. */
  faultAt(at: number): void {
    this.ledger.faults.push(at);
  }

  /** Resolves once every call left behind has started and ended. */
  async settled(): Promise<void> {
    while (this.unfired > 0 || this.calls.length > 0) {
      if (this.calls.length > 0) await Promise.all(this.calls.splice(0));
      else await sleep(20);
    }
  }

  private async body(op: BodyOp, who: string): Promise<void> {
    const { kinds, witness } = this.ctx;
    const app = this.ctx.instances[op.instance];
    const { resources, mode } = kinds.resourcesOf(op.kind, op.name);
    const state: BodyState = { running: false, lost: false };
    await kinds
      .runKind(
        app,
        op.kind,
        op.name,
        ({ signal }) =>
          witness
            .inside(
              who,
              resources,
              signal,
              async () => {
                Object.assign(state, { running: true, signal });
                const enteredAt = performance.now();
                // Made while the body holds: bound to its owner today (DESIGN §5), decided when they ask after the fix (§24).
                const objects = [this.objectOf(app, op.kind, op.name), this.objectOf(app, op.kind, op.name)];
                for (const use of op.uses) this.later(use.at, () => this.use(objects[use.object], use, op, who, `o${use.object}`, state));
                for (const [k, nested] of op.nested.entries()) this.later(nested.at, () => this.nested(app, op, nested, who, `n${k}`, state));
                const loss = op.loss;
                if (loss) {
                  await sleep(loss.at);
                  // Only while the body believes it holds: no other owner's grant is then in flight on this lock.
                  if (signal.aborted) return;
                  await this.lose(loss.how, op.kind, op.name, op.instance, who);
                  state.lost = true;
                  if (loss.awaitTold) await waitFor(() => signal.aborted, { what: 'told', timeoutMs: 3_000 }).catch(() => undefined);
                  const again = { at: 0, waitTime: loss.waitTime, holdMs: loss.holdMs };
                  if (loss.then === 'object') this.track(this.use(objects[0], { ...again, how: 'tryLock' }, op, who, 'o0', state));
                  if (loss.then === 'nested') this.track(this.nested(app, op, again, who, 'n.after-loss', state));
                }
                await sleep(op.bodyMs - (performance.now() - enteredAt));
              },
              mode,
            )
            .finally(() => (state.running = false)),
        { leaseTime: op.leaseTime, waitTime: 1_500 },
      )
      .catch((error: unknown) => this.expect(error, who));
  }

  private async flows(op: FlowsOp, who: string): Promise<void> {
    const app = this.ctx.instances[op.instance];
    // Made outside any body: the object owns itself, and both flows use it.
    const lock = this.objectOf(app, op.kind, op.name);
    const asked = this.ctx.witness.now();
    const a = await this.acquire(lock, { how: 'tryLock', waitTime: 1_500, leaseTime: op.leaseTime }, who);
    if (!a) return;
    const flowA = this.hold(lock, op, who, op.leaseTime, asked);
    let aLeft = false;
    const lossAt = sleep(op.lossAt).then(async () => {
      // Between A's lock() and unlock(), while A believes it holds (no fault since it asked).
      if (aLeft || flowA.told.aborted || this.ledger.faultSince(asked)) return;
      await this.lose(op.lossHow, op.kind, op.name, op.instance, who);
    });
    const flowB = sleep(op.bAt).then(async () => {
      const askedB = this.ctx.witness.now();
      if (!(await this.acquire(lock, { how: 'tryLock', waitTime: op.bWait, leaseTime: op.leaseTime }, who))) return;
      const b = this.hold(lock, op, who, op.leaseTime, askedB);
      await sleep(op.bHoldMs);
      await b.leave();
    });
    await sleep(op.aHoldMs);
    aLeft = true;
    await flowA.leave();
    await Promise.all([lossAt, flowB]);
  }

  /**
   * One use of an object made in the body: the body's holder, or the object's own (one object, one owner:
   * its uses re-enter each other, as two flows on one object do; owner-model-witness.ts).
   */
  private async use(lock: Lock, use: Pick<ObjectUse, 'how' | 'waitTime' | 'leaseTime' | 'holdMs'>, op: BodyOp, who: string, tag: string, state: BodyState): Promise<void> {
    const asked = this.ctx.witness.now();
    const reentry = reentering(state);
    if (!(await this.acquire(lock, use, `${who}/${tag}`))) return;
    if (reentry && state.signal?.aborted) {
      // Asked as a re-entry, granted after the body was told: the body's hold had ended by the time
      // Redis was asked (a lease run out during a stall), so the library asked as the object's own
      // owner, whose other uses it re-enters. Neither the body's holder nor (as its uses overlap by
      // design) a separate one: not witnessed, only released.
      await sleep(use.holdMs);
      await lock.unlock().catch((error: unknown) => this.expect(error, `${who}/${tag} unlock`));
      return;
    }
    const held = this.hold(lock, op, reentry ? who : `${who}/${tag}`, use.leaseTime, asked, reentry ? state.signal : undefined);
    await sleep(use.holdMs);
    await held.leave();
  }

  /** A nested run of the body's lock, left running (see the header for its holder). */
  private nested(app: TestingModule, op: BodyOp, nested: Omit<NestedRun, 'at'>, who: string, tag: string, state: BodyState): Promise<void> {
    const { kinds, witness } = this.ctx;
    const { resources, mode } = kinds.resourcesOf(op.kind, op.name);
    const asked = witness.now();
    const reentry = reentering(state);
    return kinds
      .runKind(app, op.kind, op.name, ({ signal }) => {
        // Asked as a re-entry, granted after the body was told: an owner of its own (see `use`), witnessed as one.
        const asBody = reentry && !state.signal?.aborted;
        const visit = witness.enter(asBody ? who : `${who}/${tag}`, resources, signal, mode);
        this.ledger.askedAt.set(visit, asked);
        return sleep(nested.holdMs).finally(() => witness.exit(visit));
      }, { waitTime: nested.waitTime, leaseTime: nested.leaseTime })
      .then(() => undefined, (error: unknown) => this.expect(error, `${who}/${tag}`));
  }

  /** The other instance runs the lock (its own holder). */
  private contend(op: OwnerOp, contender: Contender, holder: string): Promise<void> {
    const { kinds, witness } = this.ctx;
    const { resources, mode } = kinds.resourcesOf(op.kind, op.name);
    const asked = witness.now();
    return kinds
      .runKind(this.ctx.instances[1 - op.instance], op.kind, op.name, ({ signal }) => {
        const visit = witness.enter(holder, resources, signal, mode);
        this.ledger.askedAt.set(visit, asked);
        return sleep(contender.bodyMs).finally(() => witness.exit(visit));
      }, { waitTime: contender.waitTime })
      .then(() => undefined, (error: unknown) => this.expect(error, holder));
  }

  private async acquire(lock: Lock, use: Pick<ObjectUse, 'how' | 'waitTime' | 'leaseTime'>, who: string): Promise<boolean> {
    try {
      if (use.how === 'tryLock') return await lock.tryLock({ waitTime: use.waitTime, leaseTime: use.leaseTime });
      await lock.lock({ leaseTime: use.leaseTime, signal: AbortSignal.timeout(LOCK_WAIT_BOUND_MS) });
      return true;
    } catch (error) {
      this.expect(error, who);
      return false;
    }
  }

  /** An object hold as a witness visit, told as the header says; `leave()` exits, then unlocks. */
  private hold(lock: Lock, op: OwnerOp, holder: string, leaseTime: number | undefined, asked: number, bodySignal?: AbortSignal): { told: AbortSignal; leave(): Promise<void> } {
    const { kinds, witness } = this.ctx;
    const { resources, mode } = kinds.resourcesOf(op.kind, op.name);
    const told = new AbortController();
    if (bodySignal?.aborted) told.abort();
    else bodySignal?.addEventListener('abort', () => told.abort(), { once: true });
    const leaseMs = leaseTime ?? (this.ctx.relayedInstance === op.instance ? this.ctx.watchdogMs : undefined);
    const leaseEnd = leaseMs === undefined ? undefined : setTimeout(() => told.abort(), Math.max(0, asked + leaseMs - leaseDriftMs(leaseMs) - witness.now()));
    const visit = witness.enter(holder, resources, told.signal, mode);
    this.ledger.askedAt.set(visit, asked);
    this.ledger.objectVisits.add(visit);
    return {
      told: told.signal,
      leave: async () => {
        witness.exit(visit);
        clearTimeout(leaseEnd);
        await lock.unlock().catch((error: unknown) => this.expect(error, `${holder} unlock`));
      },
    };
  }

  /** Ends the lock's hold behind its holders' backs (see the header). */
  private async lose(how: LossHow, kind: OwnerKind, name: Name, instance: number, performer: string): Promise<void> {
    const { kinds, raw, witness } = this.ctx;
    const effective = how === 'flushall' && this.ctx.hasChild ? 'del' : how;
    const from = witness.now();
    const lockName = kinds.lockName(kind, name);
    try {
      if (effective === 'flushall') await raw.flushall();
      else if (effective === 'force') await this.objectOf(this.ctx.instances[1 - instance], kind, name).forceUnlock();
      else if (kind === 'write') await raw.del(KEYS.readWrite(lockName), LockKeys.readWriteLeases(KEYS.readWrite(lockName)));
      else await raw.del(KEYS.lock(lockName));
    } catch (error) {
      this.expect(error, `${performer} loss`);
    }
    const { resources } = kinds.resourcesOf(kind, name);
    this.ledger.losses.push({ from, to: witness.now(), resources: effective === 'flushall' ? undefined : resources, performer });
  }

  private objectOf(app: TestingModule, kind: OwnerKind, name: Name): Lock {
    if (kind === 'write') return app.get(ReadWriteLockService).getReadWriteLock(this.ctx.kinds.lockName(kind, name)).writeLock();
    return this.ctx.kinds.lockOf(app, kind, name);
  }

  /** Runs `call` in `ms` (a timer: made inside a body, it keeps the body's call chain), awaited with the schedule. */
  private later(ms: number, call: () => Promise<void>): void {
    this.unfired++;
    this.ctx.timers.push(
      setTimeout(() => {
        this.unfired--;
        this.track(call());
      }, ms),
    );
  }

  private track(call: Promise<void>): void {
    this.calls.push(call.catch((error: unknown) => this.expect(error, 'owner-model call')));
  }

  /** Lock errors and an abandoned wait are outcomes; anything else is reported. */
  private expect(error: unknown, who: string): void {
    if (error instanceof LockError) return;
    // `AbortSignal.timeout`'s reason: a DOMException of Node's realm (not an Error of the test's).
    const name = (error as { name?: unknown } | undefined)?.name;
    if (name === 'TimeoutError' || name === 'AbortError') return;
    this.ctx.unexpected.push(`${who}: ${String(error)}`);
  }
}
