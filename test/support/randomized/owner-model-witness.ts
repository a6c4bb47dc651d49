/**
 * What the owner model's ops (owner-model-ops.ts) hold and when it counts as told, for the randomized
 * hold model's witness, whose rule is unchanged: no two holders inside one lock unless the earlier
 * one's signal aborted before the later entered.
 *
 * Who holds (the witness's holder):
 * - A grant through a lock object made in a body, or a nested run of the body's lock, is the body's
 *   holder only when it was asked for while the body ran, its signal live, and before this op lost the
 *   body's hold: it then counts on the body's hold (decided when it asks, as DESIGN §24 says; a stalled
 *   event loop may handle its grant after the body ended). Any other grant (asked after the body ended,
 *   after the body was told, after the loss) is a holder of its own: the object's (one object, one owner, so its
 *   own grants re-enter each other), or the nested run's. So a second owner let in beside an object
 *   that still holds is found, and so is a run's release that ends a hold it did not take.
 * - Both flows on one lock object made outside any body are one holder (one object, one owner).
 *
 * What counts as told:
 * - A run body, nested or not: its own `signal`, as everywhere in the model.
 * - A hold taken through `lock()`/`tryLock()` has no signal of its own. It counts as told when the
 *   body it counts on is told (re-entries only), when its fixed lease ends (from when it asked, less
 *   the drift margin: its holder knows that much), and when anything that may end a hold behind a
 *   holder's back happens between its asking and its leaving: a fault (Redis frozen, connections
 *   killed, this event loop stalled, an instance shut down) or one of the owner model's losses. Such a hold
 *   cannot be told by the library (only `unlock()` can say `LockNotHeldError`): that is the fencing
 *   token's case, not a second holder let in by the library. On the instance behind the delay relay a
 *   watchdog-kept object hold counts as told once its first lease (the watchdog timeout) could have
 *   run out: a late grant there ends by its own timer, which an object hold cannot tell either.
 * - A loss (keys deleted, force-released, FLUSHALL) ends every hold inside the lock (all locks:
 *   FLUSHALL) at the moment it was sent. A grant the loss may have overtaken (asked before the loss
 *   completed, entered after it) counts as ended at its entry: for the loss's own body, and, after a
 *   FLUSHALL, for anyone (the base ops' grants within `FLUSH_GRACE_MS`: their asking is not recorded).
 *   A loss is only sent while its body (or flow) still believes it holds, so no other owner's grant
 *   is in flight on that lock (DEL and force release; FLUSHALL reaches other locks too).
 */
import type { HoldWitness, Visit } from '../hold-witness';

/** Past every relay delay and stall after an attempt a schedule draws (280 ms a way, 900 ms). */
const FLUSH_GRACE_MS = 1_500;

export interface LossEvent {
  /** When the loss was sent, and when it was answered (monotonic, the witness's clock). */
  from: number;
  to: number;
  /** The witness's resources it ended; undefined: every lock (FLUSHALL). */
  resources?: readonly string[];
  /** The holder whose op sent it (its grants in flight are the ones it may have overtaken). */
  performer: string;
}

export class OwnerModelLedger {
  readonly losses: LossEvent[] = [];
  /** When a fault began (Redis frozen, connections killed, an instance shut down). */
  readonly faults: number[] = [];
  /** When each of the owner model's visits asked for its grant. */
  readonly askedAt = new Map<Visit, number>();
  /** Holds taken through `lock()`/`tryLock()`: no signal of their own. */
  readonly objectVisits = new Set<Visit>();

  constructor(
    private readonly witness: HoldWitness,
    /** When this process's event loop stood still (the schedule's record, filled as it runs). */
    private readonly stalled: ReadonlyArray<{ from: number }>,
  ) {}

  /** Every fault's start, this event loop's stalls included. */
  private faultStarts(): number[] {
    return [...this.faults, ...this.stalled.map(({ from }) => from)].sort((a, b) => a - b);
  }

  /** Whether a fault began at or after `at`. */
  faultSince(at: number): boolean {
    return this.faultStarts().some((start) => start >= at);
  }

  /** Applies the header's rules to the witness's visits, once every body ended. */
  settle(): void {
    const faults = this.faultStarts();
    for (const visit of this.witness.visits) {
      const out = visit.exitedAt ?? Infinity;
      const ends: number[] = [];
      for (const loss of this.losses) {
        if (loss.resources && !loss.resources.some((r) => visit.resources.includes(r))) continue;
        if (visit.enteredAt <= loss.from && out > loss.from) ends.push(loss.from);
        const asked = this.askedAt.get(visit);
        const overtaken = visit.enteredAt > loss.from && (asked === undefined ? !loss.resources && visit.enteredAt <= loss.to + FLUSH_GRACE_MS : asked < loss.to);
        if (overtaken && (!loss.resources || visit.who.startsWith(loss.performer))) ends.push(visit.enteredAt);
      }
      if (this.objectVisits.has(visit)) {
        const asked = this.askedAt.get(visit) ?? visit.enteredAt;
        for (const at of faults) if (at >= asked && at < out) ends.push(Math.max(at, visit.enteredAt));
      }
      if (ends.length > 0) visit.abortedAt = Math.min(visit.abortedAt ?? Infinity, ...ends);
    }
  }

  /** FC_VISITS=1: the schedule's visits in order of entry (who, where, in, out, told), its losses and faults, to read a finding's timeline. */
  timeline(): string {
    if (!process.env.FC_VISITS) return '';
    const at = (t?: number) => (t === undefined ? '-' : this.witness.at(t));
    const visits = [...this.witness.visits]
      .sort((a, b) => a.enteredAt - b.enteredAt)
      .map((v) => `${v.who} ${v.resources.join(',')} ${v.mode} in ${at(v.enteredAt)} out ${at(v.exitedAt)} told ${at(v.abortedAt)}`);
    const losses = this.losses.map((l) => `loss by ${l.performer} of ${l.resources?.join(',') ?? 'everything'} ${at(l.from)}..${at(l.to)}`);
    const faults = this.faultStarts().map((f) => `fault ${at(f)}`);
    return `\nvisits:\n${[...visits, ...losses, ...faults].join('\n')}`;
  }

  /** A line of the second witness ("asked at +Nms") a FLUSHALL explains: the body's grant was wiped in flight. */
  excuses(notGranted: string): boolean {
    const match = /asked at \+(-?\d+)ms/.exec(notGranted);
    if (!match) return false;
    const at = Number(match[1]) + this.witness.origin;
    return this.losses.some((loss) => !loss.resources && at >= loss.from - 1 && at <= loss.to + FLUSH_GRACE_MS);
  }
}
