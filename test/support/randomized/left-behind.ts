/**
 * Continuations a body of the randomized hold model leaves behind (`op.linger`): a setTimeout, a
 * setInterval, an unawaited promise or a getLock().tryLock() asking for the body's lock, often after
 * the body ended. A call started after the body ended is a new owner (its own holder in the witness);
 * one started while the body still runs is a re-entry (the body's holder).
 */
import type { TestingModule } from '@nestjs/testing';
import { LockError, type RunOptions } from '../../../lib';
import type { HoldWitness } from '../hold-witness';
import { sleep } from '../lock-app';
import { holdSignal, type LayoutKinds } from './kinds';
import { NAMES, type JobOp, type Kind } from './schedule';

export class LeftBehind {
  /** Calls that bodies left behind: awaited with the ops. */
  readonly calls: Array<Promise<void>> = [];
  /** Calls that bodies left behind and that have not started yet. */
  unfired = 0;

  constructor(
    private readonly kinds: LayoutKinds,
    private readonly witness: HoldWitness,
    /** The schedule's timers (cleared at its end). */
    private readonly timers: NodeJS.Timeout[],
    /** The schedule's unexpected errors. */
    private readonly unexpected: string[],
  ) {}

  /** Leaves `op.linger`'s calls behind, asking for the body's lock. */
  leave(op: JobOp, who: string, app: TestingModule, bodyOver: () => boolean): void {
    const linger = op.linger!;
    // A multi-lock's continuations ask for its first member.
    const kind: Kind = op.kind === 'multi' ? 'plain' : op.kind;
    const name = op.kind === 'multi' ? NAMES[0] : op.name;
    const { resources, mode } = this.kinds.resourcesOf(kind, name);
    const call = (k: number): Promise<void> => {
      // Started once the body ended: a new owner. Started while it runs: a re-entry, the body's holder.
      const holder = bodyOver() ? `${who}/${linger.how}${k}` : who;
      const inside = (signal: AbortSignal) => this.witness.inside(holder, resources, signal, () => sleep(linger.bodyMs), mode);
      if (linger.how === 'getLock' && (kind === 'plain' || kind === 'fair')) {
        const lock = this.kinds.lockOf(app, kind, name);
        return lock.tryLock({ waitTime: linger.skipIfLocked ? 0 : linger.waitTime }).then(async (ok) => {
          if (!ok) return;
          try {
            await inside(holdSignal(lock));
          } finally {
            await lock.unlock().catch((error: unknown) => {
              if (!(error instanceof LockError)) this.unexpected.push(`${holder} unlock: ${String(error)}`);
            });
          }
        });
      }
      const options: RunOptions = linger.skipIfLocked ? { skipIfLocked: true } : { waitTime: linger.waitTime };
      return this.kinds.runKind(app, kind, name, ({ signal }) => inside(signal), options).then(() => undefined);
    };
    const track = (k: number): void => {
      this.unfired--;
      this.calls.push(
        call(k).catch((error: unknown) => {
          if (!(error instanceof LockError)) this.unexpected.push(`${who} ${linger.how}${k}: ${String(error)}`);
        }),
      );
    };
    this.unfired += linger.calls;
    if (linger.how === 'interval') {
      this.timers.push(
        setTimeout(() => {
          track(1);
          if (linger.calls === 1) return;
          let k = 1;
          const interval = setInterval(() => {
            track(++k);
            if (k >= linger.calls) clearInterval(interval);
          }, linger.everyMs);
          this.timers.push(interval);
        }, linger.delayMs),
      );
      return;
    }
    for (let k = 1; k <= linger.calls; k++) {
      const delay = linger.delayMs + (k - 1) * linger.everyMs;
      if (linger.how === 'promise') {
        // Nobody awaits it (the body does not): a promise chain that outlives the body.
        void sleep(delay).then(() => track(k));
      } else {
        this.timers.push(setTimeout(() => track(k), delay));
      }
    }
  }

  /** Resolves once every call left behind has started and ended (a timer, an interval's ticks may start late). */
  async settled(): Promise<void> {
    while (this.unfired > 0 || this.calls.length > 0) {
      if (this.calls.length > 0) await Promise.all(this.calls.splice(0));
      else await sleep(20);
    }
  }
}
