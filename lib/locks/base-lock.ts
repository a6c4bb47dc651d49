import { LockKeys } from '../redis/lock-keys';
import type { CallTicket } from '../redis/bounded-call';
import type { ScriptCall } from '../redis/lua-script';
import type { HeldLock, HoldTerms } from '../runtime/held-locks';
import type { LockEngine } from '../runtime/lock-engine';
import { cancellable, type Cancellation } from '../runtime/cancellation';
import { observeAcquire, type LockKind } from '../metrics/lock-telemetry';
import { Acquisition, attemptOnConnection, type AttemptOutcome, type Contender, type Grant, type WaitRoom } from './acquisition';
import { LockNotHeldError, ReentryEndedError } from '../errors';
import { LOCK_LOST, LOST_NEW_EPISODE, LOST_RELEASE_FOUND_GONE, LOST_REENTRY_ENDED } from '../lock.messages';
import { confirmHandOver } from '../runtime/hand-over';
import type { WaitKind, WaitMode, WaitTarget } from '../deadlocks/wait-node';
import { monotonicNow } from '../runtime/monotonic-clock';
import type { ForceUnlockOptions, Lock, LockOptions, LockRunContext, TryLockOptions } from './lock';
import { heldLocksOf, runContextOf } from './owned-lock';
import type { RunnableLock } from './runnable-lock';

/** Outcome of one acquisition attempt's script: a grant, or how long the lock may stay busy (ms). */
export type AttemptResult = Grant | number;

const NO_TOKEN: Grant = { fencingToken: undefined };

/**
 * Reads an acquire script's reply: `{token}` (or nil, for a kind without tokens) when granted,
 * else the lock's TTL in ms.
 */
export function attemptResult(reply: unknown): AttemptResult {
  if (reply === null || reply === undefined) return NO_TOKEN;
  if (Array.isArray(reply)) return { fencingToken: Number(reply[0]) || undefined };
  return Number(reply);
}

/** An acquire script's answer to a re-entry-only attempt whose owner holds nothing (see `BaseLock.reenterOnly`). */
export const REENTRY_ENDED = -4;

/**
 * A re-entry-only attempt's result: Redis answering that the owner holds nothing rejects it (the
 * hold it would re-enter ended), so the lock a body's call chain asked through asks again as an owner
 * of its own (docs/owners-and-reentry.md#the-owner-model).
 */
export function reentryAnswer(lock: { readonly reenterOnly: boolean; readonly name: string }, result: AttemptResult): AttemptResult {
  if (lock.reenterOnly && result === REENTRY_ENDED) throw new ReentryEndedError(lock.name);
  return result;
}

/** Outcome of one release: `null` when not held, 0 when holds remain, 1 when released. */
export type ReleaseResult = 0 | 1 | null;

/** A read-write release's answer: no hold in this mode, but the owner holds the other one. */
export const HOLDS_OTHER_MODE = -1;

/** A release whose outcome is unknown is sent again after this long, doubling up to the max. */
const RELEASE_RESEND_FIRST_MS = 100;
const RELEASE_RESEND_MAX_MS = 1_000;

const ignore = (): undefined => undefined;

/**
 * The request part of a line entry: the acquisition's request id, then `/<join>` from its second
 * join of the line on (entries are unique per join; the scripts apply the bare request id).
 */
/** A hold's fencing token as the lock hash stores it ('' for none): see `releaseOwn`. */
const tokenText = (hold: HeldLock | undefined): string => (hold?.fencingToken === undefined ? '' : String(hold.fencingToken));

export const lineRequest = (requestId: string, join: number): string => (join === 0 ? requestId : `${requestId}/${join}`);

/**
 * What every single-server lock kind shares. A kind supplies its scripts through `acquireScript`,
 * `releaseOne` and `renewalCall`; this class is the kind's contender in the acquisition machine
 * (`Acquisition`, which waits on the shared subscriber between attempts, never polling), records
 * holds for the watchdog, and cancels renewal before a release.
 */
export abstract class BaseLock implements Lock, RunnableLock, Contender<boolean> {
  constructor(
    /** @internal */
    readonly engine: LockEngine,
    readonly name: string,
    /** The Redis key that identifies this lock (and the owner context entry). */
    readonly lockKey: string,
    readonly ownerId: string,
  ) {}

  /** One atomic acquisition attempt: the kind's acquire script. */
  protected abstract acquireScript(
    leaseMs: number,
    requestId: string,
    joinLine: boolean,
    ticket?: CallTicket,
    attemptStamp?: string,
    join?: number,
  ): Promise<AttemptResult>;
  /**
   * One atomic release of one hold; with `grantedBy` (an acquire request id), only of the hold that
   * request granted, if it did.
   */
  protected abstract releaseOne(requestId: string, grantedBy?: string, ticket?: CallTicket, heldToken?: string): Promise<ReleaseResult>;
  /**
   * The script the watchdog replays to renew this owner's hold: it never shortens a longer lease
   * another hold has; `exact`: the lease becomes `leaseMs` (a `minHoldTime` release). `token`: the
   * episode's fencing token, for a kind whose renewal can check it (an ended episode renews nothing).
   */
  protected abstract renewalCall(leaseMs: number, exact?: boolean, token?: number): ScriptCall;
  /** The `lock.kind` of this lock's metrics and spans. */
  abstract readonly kind: LockKind;

  /** @internal Channel whose unlock messages wake this lock's waiters. */
  get waitChannel(): string {
    return LockKeys.channel(this.lockKey);
  }

  /** @internal Longest sleep between attempts (a fair lock's waiter must refresh its place in line). */
  get maxSleepMs(): number {
    return Number.POSITIVE_INFINITY;
  }

  /**
   * Releases one hold of this owner at shutdown, whichever object took it (the read and write views
   * of a read-write lock share one owner's hold record).
   */
  protected releaseAnyHold(): Promise<unknown> {
    return this.releaseOne(this.engine.ids.nextRequest());
  }

  async lock(options?: LockOptions): Promise<void> {
    await this.observedAcquire(Number.POSITIVE_INFINITY, options);
  }

  tryLock(options?: TryLockOptions): Promise<boolean> {
    return this.observedAcquire(options?.waitTime ?? 0, options);
  }

  /** An acquisition with its telemetry, cancellable through `options.signal`. */
  private observedAcquire(waitMs: number, options: LockOptions | undefined): Promise<boolean> {
    return observeAcquire(this.engine.telemetry, this.kind, this.name, options, () => this.getFencingToken(), () =>
      cancellable(options?.signal, (cancellation) => this.acquire(waitMs, options, cancellation)),
    );
  }

  /**
   * Releases one hold this object took (docs/owners-and-reentry.md#the-owner-model): first one owed
   * to an episode that ended (lost: its release names that episode, so Redis never lets it end a
   * later one), else the innermost. An object that took nothing holds nothing: `LockNotHeldError`.
   */
  unlock(): Promise<void> {
    const hold = this.takeHandle();
    if (!hold) return Promise.reject(new LockNotHeldError(this.name));
    return this.releaseHandle(hold);
  }

  /** The holds this object's acquisitions counted on, one per acquisition not yet released, in order. */
  private handles: HeldLock[] | undefined;

  /** Takes out the handle `unlock` releases: the first owed to an ended episode, else the last. */
  private takeHandle(): HeldLock | undefined {
    const handles = this.handles;
    if (!handles || handles.length === 0) return undefined;
    const { holds } = this.engine;
    let index = handles.length - 1;
    for (let i = 0; i < handles.length - 1; i++) {
      if (!holds.isCurrent(handles[i])) {
        index = i;
        break;
      }
    }
    return handles.splice(index, 1)[0];
  }

  /** @internal Whether one of this object's handles counts on a hold that ended here (its `unlock` settles that first). */
  get owesEndedHold(): boolean {
    const { holds } = this.engine;
    return this.handles?.some((hold) => !holds.isCurrent(hold)) ?? false;
  }

  /**
   * Whether a release names its episode to Redis, so Redis refuses one whose episode ended (the
   * native kinds, by fencing token). Layout 'redisson' keeps no episode in Redis: a handle of an
   * ended hold is not sent there (docs/redisson-interop.md#owners).
   */
  protected get releasesNameEpisode(): boolean {
    return true;
  }

  /** @internal A re-entry-only attempt found `hold` ended in Redis: forgotten, its bodies told. */
  reentryEnded(hold: HeldLock): void {
    if (this.engine.holds.isCurrent(hold)) this.episodeEnded(hold, LOST_REENTRY_ENDED);
  }

  /** The hold this object's last acquisition counted on (current or not). */
  private get lastHandle(): HeldLock | undefined {
    const handles = this.handles;
    return handles && handles.length > 0 ? handles[handles.length - 1] : undefined;
  }

  /** Hook: one hold of `hold` is about to be released (a read-write view counts its write holds off). */
  protected releasing(_hold: HeldLock): void {}

  /**
   * Releases one count of `hold` (a handle this object took). A hold still current is counted off
   * first (out of the registry when it was the last: the watchdog must not renew, resurrect, what is
   * being released); one that ended here (lost) is left as it is, and its release still names its
   * episode (its fencing token) so Redis applies it only to that episode. An ended hold without a
   * token (a read) cannot be named to Redis: nothing is sent.
   */
  private releaseHandle(hold: HeldLock): Promise<void> {
    const { holds, ids } = this.engine;
    const current = holds.isCurrent(hold);
    if (!current && (hold.fencingToken === undefined || !this.releasesNameEpisode)) return Promise.reject(new LockNotHeldError(this.name));
    if (current) this.releasing(hold);
    const last = current ? holds.released(hold) : true;
    const counted = current ? hold : undefined;
    const requestId = ids.nextRequest();
    // A plain promise chain rather than an async function: one promise less per release.
    return this.engine.call(this.name, (ticket) => this.releaseOwn(requestId, ticket, hold)).then(
      (result) => this.releaseAnswered(counted, last, result),
      (error: unknown) => {
        // Unknown outcome (no answer in time, Redis unreachable): the holds that remain stay held
        // and renewed, and the same release (same request id: its release record makes a repeat
        // harmless) goes out again until Redis answers.
        this.resendRelease(requestId, hold, counted, last);
        throw error;
      },
    );
  }

  /**
   * One release of one of this owner's holds, as `unlock` sends it (a read-write view may answer "the
   * other mode"). With the hold's fencing token, Redis can tell a first release of the hold's last
   * count from a resent one without reading a release record (lua/reentrant-release.lua).
   */
  protected releaseOwn(requestId: string, ticket: CallTicket, hold?: HeldLock): Promise<ReleaseResult | typeof HOLDS_OTHER_MODE> {
    return this.releaseOne(requestId, '', ticket, tokenText(hold));
  }

  /** What Redis answered to `unlock`'s release, against what this process counted. */
  private releaseAnswered(hold: HeldLock | undefined, last: boolean, result: ReleaseResult | typeof HOLDS_OTHER_MODE): void {
    if (result === HOLDS_OTHER_MODE) {
      if (hold) {
        this.engine.holds.restore(hold);
        (this.handles ??= []).push(hold);
      }
      throw new LockNotHeldError(this.name);
    }
    // Redis holds nothing more of this owner while holds remained here: they were lost.
    if (hold && !last && result !== 0) this.lostOnRelease(hold);
    if (result === null) throw new LockNotHeldError(this.name);
  }

  /**
   * Sends a release whose outcome is unknown again, with its request id, until Redis answers: only
   * while its release record surely lives (a repeat after it expired could release a later hold).
   */
  private resendRelease(requestId: string, released: HeldLock, hold: HeldLock | undefined, last: boolean): void {
    const { engine } = this;
    const until = monotonicNow() + engine.releaseRecordTtlMs - 2 * engine.options.commandTimeout;
    let delayMs = RELEASE_RESEND_FIRST_MS;
    const resend = (): void => {
      if (engine.shuttingDown || monotonicNow() >= until) return;
      engine.call(this.name, (ticket) => this.releaseOwn(requestId, ticket, released)).then(
        (result) => {
          if (hold && !last && result !== 0 && result !== HOLDS_OTHER_MODE && engine.holds.isCurrent(hold)) this.lostOnRelease(hold);
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
    this.engine.holds.forget(hold);
    hold.lose(LOST_RELEASE_FOUND_GONE);
    this.engine.logger.warn(LOCK_LOST(this.name, LOST_RELEASE_FOUND_GONE));
  }

  /**
   * Deletes the lock whoever holds it (or only while the hold with `options.fencingToken` holds
   * it); its waiters in line get it in order (each kind's own script).
   */
  abstract forceUnlock(options?: ForceUnlockOptions): Promise<boolean>;

  async isLocked(): Promise<boolean> {
    return (await this.engine.call(this.name, () => this.engine.client.exists(this.lockKey))) === 1;
  }

  async isHeldByCurrentOwner(): Promise<boolean> {
    return (await this.engine.call(this.name, () => this.engine.client.hexists(this.lockKey, this.ownerId))) === 1;
  }

  async getHoldCount(): Promise<number> {
    return Number((await this.engine.call(this.name, () => this.engine.client.hget(this.lockKey, this.ownerId))) ?? 0);
  }

  remainTimeToLive(): Promise<number> {
    return this.engine.call(this.name, () => this.engine.client.pttl(this.lockKey));
  }

  /** The current owner's fencing token, known locally: `undefined` when this owner holds nothing here. */
  getFencingToken(): number | undefined {
    return this.hold?.fencingToken;
  }

  /**
   * The hold this object's last acquisition counted on while it is current; otherwise the owner's
   * current hold in this process, if any (a read-write view shares its owner's with the other view).
   */
  get hold(): HeldLock | undefined {
    const last = this.lastHandle;
    const { holds } = this.engine;
    return last && holds.isCurrent(last) ? last : holds.get(this.lockKey, this.ownerId);
  }

  /** Acquires within `waitMs`: the acquisition machine, with this lock as its contender. */
  protected acquire(waitMs: number, options: LockOptions | undefined, cancellation?: Cancellation): Promise<boolean> {
    return Acquisition.start<boolean>(this, waitMs, false, options, cancellation);
  }

  // What `run` and the decorators need (see `RunnableLock`).

  get runName(): string {
    return this.name;
  }

  heldLocks(): readonly HeldLock[] {
    return heldLocksOf(this);
  }

  runContext(): LockRunContext {
    return runContextOf(this);
  }

  /**
   * `minHoldTime`'s release: the kind's renewal script with `ms` as the lease, in place of the
   * release, so the owner's hold (for a read-write lock, whatever it still holds) expires in Redis by
   * itself; a re-entered hold only drops its count.
   */
  keepHeldFor(ms: number): Promise<void> {
    const hold = this.lastHandle;
    const { engine } = this;
    if (!hold || !engine.holds.isCurrent(hold) || hold.holdCount > 1) return this.unlock();
    // Forgotten first, as a release does: the watchdog must not renew it past `ms` meanwhile.
    const exact = this.mayShortenOnKeep();
    this.handles?.pop();
    this.releasing(hold);
    engine.holds.released(hold);
    const { script, keys, args } = this.renewalCall(ms, exact, hold.fencingToken);
    return engine.call(this.name, (ticket) => script.run(engine.client, keys, args, ticket)).then((renewed) => {
      if (renewed !== 1) throw new LockNotHeldError(this.name);
    });
  }

  /**
   * Whether `keepHeldFor` may set the lease to exactly its `ms` (shortening it). A kind whose holds
   * of one owner share one TTL says no while another grant of the owner is on its way (its key must
   * keep that grant's lease): the renewal is then extend-only.
   */
  protected mayShortenOnKeep(): boolean {
    return true;
  }

  /**
   * @internal A fresh lease of `leaseMs` for this owner's hold, from now (a multi-lock re-arms the
   * members it took first once the last is granted). False when Redis or this process no longer has
   * the hold.
   */
  rearm(leaseMs: number): Promise<boolean> {
    const { engine } = this;
    const hold = this.hold;
    if (!hold || hold.aborted) return Promise.resolve(false);
    const { script, keys, args } = this.renewalCall(leaseMs, false, hold.fencingToken);
    const sentAt = monotonicNow();
    return engine
      .call(this.name, (ticket) => script.run(engine.client, keys, args, ticket))
      .then((renewed) => renewed === 1 && engine.holds.rearmed(hold, sentAt, leaseMs));
  }

  // The contender's side of an acquisition (see `Contender` in acquisition.ts).

  /** @internal What a wait for this lock waits for, as the deadlock check sees it (made when it waits). */
  get waitTarget(): WaitTarget {
    const { engine, name, lockKey, ownerId } = this;
    return { engine, kind: this.waitKind, name, lockKey, ownerId, mode: this.waitMode, need: 1, total: 1, crossProcess: true };
  }

  /** @internal How a wait for this lock conflicts with its holders. */
  protected get waitMode(): WaitMode {
    return 'exclusive';
  }

  /** @internal The lock's layout in Redis, for the cross-process deadlock check. */
  protected get waitKind(): WaitKind {
    return 'lock';
  }

  /** @internal */
  get room(): WaitRoom {
    return this.engine.subscriber;
  }

  /** @internal A release message wakes this lock's waiters. */
  readonly wakesOnRelease = true;

  /** @internal */
  get replicaKey(): string {
    return this.lockKey;
  }

  /** @internal One attempt, bounded; Redis failures come back as a value. */
  attempt(leaseMs: number, requestId: string, joinLine: boolean, attemptStamp = '', join = 0): Promise<AttemptOutcome> {
    return attemptOnConnection(this.engine, this.name, (ticket) =>
      this.acquireScript(leaseMs, requestId, joinLine, ticket, attemptStamp, join),
    );
  }

  /**
   * @internal While others of this process wait already (the channel is subscribed), a newcomer takes
   * its seat before its attempt: a hand-over that names it right after that attempt joined the line
   * is not missed, and the usual second attempt after seating is saved. An uncontended acquisition
   * never subscribes.
   */
  seatsFirst(): boolean {
    return this.engine.subscriber.hasWaiters(this.waitChannel);
  }

  /**
   * @internal Asks only to re-enter the hold of this owner that Redis has now, never to start a new
   * one: set on the lock a body's call chain re-enters through (docs/owners-and-reentry.md#the-owner-model).
   * Redis answering that the owner holds nothing rejects the attempt with `ReentryEndedError`.
   */
  reenterOnly = false;

  /** @internal Records the hold (the watchdog renews it unless a `leaseTime` was given) as this object's handle. */
  held(grant: Grant, leaseMs: number, options: LockOptions | undefined, grantSentAt: number): boolean {
    const leaseTime = options?.leaseTime;
    const terms: HoldTerms = {
      leaseMs,
      grantSentAt,
      fencingToken: grant.fencingToken,
      renewal: leaseTime === undefined ? { client: this.engine.client, call: this.renewalCall(leaseMs, false, grant.fencingToken) } : undefined,
      releaseOne: () => this.releaseAnyHold(),
      telemetry: this.engine.telemetry?.holdTelemetry(this.kind, this.name, options),
      grantedLeaseMs: grant.grantedLeaseMs,
    };
    this.endedEpisodeFound(grant.fencingToken);
    const hold = this.engine.holds.acquired(this.name, this.lockKey, this.ownerId, terms);
    (this.handles ??= []).push(hold);
    if (grant.grantedLeaseMs !== undefined) confirmHandOver(this.engine, this.name, hold, leaseMs, this.renewalCall(leaseMs, false, grant.fencingToken));
    return true;
  }

  /**
   * A re-entry keeps its hold's fencing token; a grant with another token started a new episode in
   * Redis: the hold this process still counts had ended there (deleted, flushed, lost in a restart)
   * before the watchdog could tell, so its bodies ran unprotected. They are told now (the hold's
   * signal aborts) and the hold is forgotten: the grant starts a hold record of its own, and the
   * handles of the ended one name the ended episode, which Redis refuses to release
   * (docs/owners-and-reentry.md#the-owner-model), so no release of a told body ends the new one.
   */
  protected endedEpisodeFound(grantedToken: number | undefined): void {
    const { holds } = this.engine;
    const counted = holds.get(this.lockKey, this.ownerId);
    if (!counted || grantedToken === undefined || counted.fencingToken === undefined || counted.fencingToken === grantedToken) return;
    this.episodeEnded(counted, LOST_NEW_EPISODE);
  }

  /** `hold` ended in Redis: forgotten here, and every body counting on it told. */
  protected episodeEnded(hold: HeldLock, reason: string): void {
    this.engine.holds.forget(hold);
    if (hold.aborted) return;
    hold.lose(reason);
    this.engine.logger.warn(LOCK_LOST(this.name, reason));
  }

  /**
   * @internal A grant nobody will use: give back at once the hold `requestId` was granted (an undo
   * by request: if that grant already ended and another acquisition of this owner holds the lock
   * now, that hold is not touched).
   */
  undoGrant(requestId: string): Promise<unknown> {
    const releaseId = this.engine.ids.nextRequest();
    return this.engine.call(this.name, (ticket) => this.releaseOne(releaseId, requestId, ticket)).catch(ignore);
  }

  /**
   * @internal A wait that ends without the lock: a waiter leaves its line (waited for), which also
   * gives back a lock a release handed to it meanwhile. Otherwise, when an attempt's outcome is
   * unknown, the release that only undoes a grant made by `requestId` goes out on the same
   * connection, after the attempts, so it runs after them whenever Redis gets to them.
   */
  abandon(requestId: string, joinedLine: boolean, outcomeUnknown: boolean, lineEntry?: string): Promise<unknown> | undefined {
    const { engine } = this;
    const leaving = joinedLine && lineEntry !== undefined ? this.leaveLine(requestId, lineEntry) : undefined;
    if (leaving) return leaving;
    if (outcomeUnknown) {
      const releaseId = engine.ids.nextRequest();
      void engine.call(this.name, () => this.releaseOne(releaseId, requestId)).catch(ignore);
    }
    return leaving;
  }

  /**
   * Leaves a Redis line of waiters (entry `lineEntry`), giving back a grant made to `requestId`, for
   * a kind that has one; bounded, never rejects.
   */
  protected leaveLine(_requestId: string, _lineEntry: string): Promise<unknown> | undefined {
    return undefined;
  }
}
