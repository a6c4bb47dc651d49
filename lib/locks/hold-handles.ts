import type { CallTicket } from '../redis/bounded-call';
import type { HeldLock } from '../runtime/held-locks';
import { endHold, type HeldLocks } from '../runtime/hold-registry';
import type { LockEngine } from '../engine/lock-engine';
import { monotonicNow } from '../monotonic-clock';
import { LockNotHeldError } from '../errors';
import { LOST_RELEASE_FOUND_GONE } from '../lock.messages';
import { HOLDS_OTHER_MODE, type ReleaseResult } from './attempt-results';

/** A release whose outcome is unknown is sent again after this long, doubling up to the max. */
const RELEASE_RESEND_FIRST_MS = 100;
const RELEASE_RESEND_MAX_MS = 1_000;

/** What a lock object's handles are released through: its kind's release of one hold's episode. */
export interface HandleOwner {
  readonly engine: LockEngine;
  readonly name: string;
  /**
   * One release of one count of `hold`'s episode, as Redis is asked it (a read-write view may answer
   * "the other mode"): Redis refuses it when that episode ended.
   */
  releaseEpisode(requestId: string, ticket: CallTicket, hold: HeldLock): Promise<ReleaseResult | typeof HOLDS_OTHER_MODE>;
  /** The episode a release of `hold` names to Redis (undefined: none it can name). */
  episodeOf(hold: HeldLock): string | undefined;
  /** One count of `hold` is about to be released (a read-write view counts a write hold off). */
  releasing(hold: HeldLock): void;
  /**
   * Whether a release names its episode to Redis (the native kinds, by fencing token); layout
   * 'redisson' keeps no episode there, so a handle of an ended hold is not sent.
   */
  readonly releasesNameEpisode: boolean;
}

/**
 * A lock object's handles (docs/owners-and-reentry.md#the-owner-model): the hold record each of its
 * granted acquisitions counted on, one per acquisition not yet released, in the order taken. A
 * record is one episode of its owner's hold: once it ended (lost, or a later grant began a new
 * episode) it is no longer the registry's current one, and a handle on it is owed.
 */
export class HandleList {
  private handles: HeldLock[] | undefined;

  constructor(private readonly site: { readonly engine: { readonly holds: HeldLocks } }) {}

  add(hold: HeldLock): void {
    (this.handles ??= []).push(hold);
  }

  /** The hold of the last acquisition not yet released (current or not). */
  get last(): HeldLock | undefined {
    const handles = this.handles;
    return handles && handles.length > 0 ? handles[handles.length - 1] : undefined;
  }

  /** Whether a handle counts on a hold that ended here (its `unlock` settles that first). */
  get owesEnded(): boolean {
    const { holds } = this.site.engine;
    return this.handles?.some((hold) => !holds.isCurrent(hold)) ?? false;
  }

  /** Takes out the handle `unlock` releases: the first owed to an ended episode, else the last. */
  takeForUnlock(): HeldLock | undefined {
    const handles = this.handles;
    if (!handles || handles.length === 0) return undefined;
    const { holds } = this.site.engine;
    let index = handles.length - 1;
    for (let i = 0; i < handles.length - 1; i++) {
      if (!holds.isCurrent(handles[i])) {
        index = i;
        break;
      }
    }
    return handles.splice(index, 1)[0];
  }

  /** Takes out the last handle (a `minHoldTime` keep of the run's own hold). */
  takeLast(): HeldLock | undefined {
    return this.handles?.pop();
  }
}

/** A single-server lock object's handles, released through its kind's release of one episode. */
export class HoldHandles extends HandleList {
  constructor(private readonly owner: HandleOwner) {
    super(owner);
  }

  /**
   * Releases one count of `hold`, a handle taken out of this list. A hold still current is counted
   * off first (out of the registry when it was the last: the watchdog must not renew, resurrect,
   * what is being released); one that ended here is left as it is, and its release still names its
   * episode so Redis applies it to that episode only. An ended hold that cannot be named to Redis (no
   * token, or a layout without episodes) is not sent: `LockNotHeldError`, nothing released.
   */
  release(hold: HeldLock): Promise<void> {
    const { owner } = this;
    const { holds, ids } = owner.engine;
    const current = holds.isCurrent(hold);
    if (!current && (owner.episodeOf(hold) === undefined || !owner.releasesNameEpisode)) return Promise.reject(new LockNotHeldError(owner.name));
    if (current) owner.releasing(hold);
    const last = current ? holds.released(hold) : true;
    const counted = current ? hold : undefined;
    const requestId = ids.nextRequest();
    // A plain promise chain rather than an async function: one promise less per release.
    return owner.engine.call(owner.name, (ticket) => owner.releaseEpisode(requestId, ticket, hold)).then(
      (result) => this.answered(counted, last, result),
      (error: unknown) => {
        // Unknown outcome (no answer in time, Redis unreachable): the holds that remain stay held
        // and renewed, and the same release (same request id: its release record makes a repeat
        // harmless) goes out again until Redis answers.
        this.resend(requestId, hold, counted, last);
        throw error;
      },
    );
  }

  /** What Redis answered to a release, against what this process counted (`counted`: the hold if current). */
  private answered(counted: HeldLock | undefined, last: boolean, result: ReleaseResult | typeof HOLDS_OTHER_MODE): void {
    const { owner } = this;
    if (result === HOLDS_OTHER_MODE) {
      if (counted && owner.engine.holds.restore(counted)) this.add(counted);
      throw new LockNotHeldError(owner.name);
    }
    // Redis holds nothing more of this owner while holds remained here: they were lost.
    if (counted && !last && result !== 0) this.lostOnRelease(counted);
    if (result === null) throw new LockNotHeldError(owner.name);
  }

  /**
   * Sends a release whose outcome is unknown again, with its request id, until Redis answers: only
   * while its release record surely lives (a repeat after it expired could release a later hold).
   */
  private resend(requestId: string, released: HeldLock, counted: HeldLock | undefined, last: boolean): void {
    const { engine } = this.owner;
    const until = monotonicNow() + engine.releaseRecordTtlMs - 2 * engine.options.commandTimeout;
    let delayMs = RELEASE_RESEND_FIRST_MS;
    const resend = (): void => {
      if (engine.shuttingDown || monotonicNow() >= until) return;
      engine.call(this.owner.name, (ticket) => this.owner.releaseEpisode(requestId, ticket, released)).then(
        (result) => {
          if (counted && !last && result !== 0 && result !== HOLDS_OTHER_MODE && engine.holds.isCurrent(counted)) this.lostOnRelease(counted);
        },
        () => {
          delayMs = Math.min(2 * delayMs, RELEASE_RESEND_MAX_MS);
          schedule();
        },
      );
    };
    const schedule = (): void => {
      setTimeout(resend, delayMs).unref?.();
    };
    schedule();
  }

  private lostOnRelease(hold: HeldLock): void {
    const { engine } = this.owner;
    endHold(engine.holds, hold, LOST_RELEASE_FOUND_GONE, engine.logger);
  }
}
