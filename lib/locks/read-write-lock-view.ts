import { LockUpgradeError } from '../errors';
import { LockKeys } from '../redis/lock-keys';
import type { CallTicket } from '../redis/bounded-call';
import type { ScriptCall } from '../redis/lua-script';
import { WAKE_ALL } from '../redis/unlock-messages';
import type { LockEngine } from '../engine/lock-engine';
import type { HeldLock } from '../runtime/held-locks';
import { BaseLock } from './base-lock';
import { AttemptResult, attemptResult, HOLDS_OTHER_MODE, lineRequest, reentryAnswer, ReleaseResult } from './attempt-results';
import type { WaitKind, WaitMode } from '../deadlocks/wait-node';
import type { Grant } from './acquisition/contender';
import type { ForceUnlockOptions, LockOptions } from './lock';
import { forceReleaseToken } from '../validators';
import { FORCE_RELEASE_NO_TOKEN, LOST_NEW_EPISODE, LOST_READ_ENDED, LOST_WRITE_ENDED } from '../lock.messages';
import {
  forceReleaseScript,
  holdCountScript,
  leaveScript,
  modeScripts,
  ReadWriteRenewal,
  UPGRADE_REFUSED,
  type ModeReleaseResult,
  type ReadWriteMode,
} from './read-write-scripts';

/**
 * One view (read or write) of a read-write lock (docs/architecture.md#read-write). Both views of one owner share its hold
 * record and its lease: the watchdog renews everything the owner holds in one call, and a crashed
 * reader's lease runs out while the other readers renew theirs.
 *
 * While anyone waits, the lock has a line in Redis (as the reentrant lock does): a waiter joins it
 * with its first missed attempt, a new reader does not pass a writer waiting there, and whatever
 * frees the lock admits the head writer, or all the readers at the head, inside its script and
 * names them in `granted:` messages on their processes' channels (one trip; a writer is not starved by
 * overlapping readers). Without waiters nothing of the line exists and the scripts are today's.
 */
export class ReadWriteLockView extends BaseLock {
  readonly kind: ReadWriteMode;

  constructor(
    engine: LockEngine,
    name: string,
    readWriteKey: string,
    ownerId: string,
    readonly mode: ReadWriteMode,
  ) {
    super(engine, name, readWriteKey, ownerId);
    this.kind = mode;
  }

  private get leasesKey(): string {
    return LockKeys.readWriteLeases(this.lockKey);
  }

  // The line's keys (line, deadlines, last attempts, fence), made for each call, not kept: a view
  // that waits would carry them all along, and many waiters add up.
  private get lineKeys(): [string, string, string, string] {
    return LockKeys.lineKeys(this.lockKey);
  }

  /** @internal This process's channel for this lock: grants to its waiters come here only (see ReentrantLock). */
  override get waitChannel(): string {
    return LockKeys.clientChannel(this.lockKey, this.engine.ids.clientId);
  }

  /** @internal The lock's own channel, heard on the same seats (see `Contender.sharedChannel`). */
  get sharedChannel(): string {
    return LockKeys.channel(this.lockKey);
  }

  /** @internal This acquisition's entry in the lock's line: the grant message that admits it names it. */
  lineEntry(requestId: string, leaseMs: number, join = 0): string {
    return `${this.ownerId} ${lineRequest(requestId, join)} ${leaseMs} ${this.mode === 'read' ? 'r' : 'w'}`;
  }

  protected async acquireScript(
    leaseMs: number,
    requestId: string,
    joinLine: boolean,
    ticket?: CallTicket,
    attemptStamp = '',
    join = 0,
  ): Promise<AttemptResult> {
    const { client, fenceMemoryMs, publishCommand, options } = this.engine;
    const keys = [this.lockKey, this.leasesKey, ...this.lineKeys];
    const reenterOnly = this.reenterOnly;
    const entry = joinLine && !reenterOnly ? this.lineEntry(requestId, leaseMs, join) : '';
    const waiterTimeout = options.fairLockWaiterTimeout;
    // Only a write hold carries a fencing token: readers do not exclude each other.
    const result =
      this.mode === 'write'
        ? await modeScripts.write.acquire.run(
            client,
            keys,
            [leaseMs, this.ownerId, requestId, fenceMemoryMs, entry, waiterTimeout, publishCommand, attemptStamp, ...(reenterOnly ? ['1'] : [])],
            ticket,
          )
        : await modeScripts.read.acquire.run(
            client,
            keys,
            [leaseMs, this.ownerId, requestId, entry, waiterTimeout, publishCommand, fenceMemoryMs, attemptStamp, reenterOnly ? '1' : '', '1'],
            ticket,
          );
    if (result === UPGRADE_REFUSED) throw new LockUpgradeError(this.name);
    reentryAnswer(this, result as AttemptResult);
    // A read grant answers {fence or -1, episode}: the fence when its owner holds the write lock too (rw-read-acquire.lua).
    if (this.mode === 'read' && Array.isArray(result)) {
      const fence = Number(result[0]);
      return { fencingToken: undefined, writerFence: fence >= 0 ? fence : undefined, readEpisode: result[1] === null ? undefined : String(result[1]) };
    }
    return attemptResult(result);
  }

  protected async releaseOne(requestId: string, grantedBy = '', ticket?: CallTicket): Promise<ReleaseResult> {
    const result = await this.releaseIn(this.mode, requestId, grantedBy, ticket);
    return result === HOLDS_OTHER_MODE ? null : result;
  }

  /** @internal A reader waits for a writer; a writer for every holder (docs/deadlocks.md). */
  protected override get waitMode(): WaitMode {
    return this.mode;
  }

  protected override get waitKind(): WaitKind {
    return 'readWrite';
  }

  /** @internal Counts a write hold on the owner's shared hold record (a reader waits only for those). */
  override held(handedOrAnswered: Grant, leaseMs: number, options: LockOptions | undefined, grantSentAt: number): boolean {
    let grant = handedOrAnswered;
    // A read handed over by a release: its grant message carries the read episode where a write's carries its token (rw-grant-line).
    if (this.mode === 'read' && grant.readEpisode === undefined && grant.fencingToken !== undefined) {
      grant = { ...grant, fencingToken: undefined, readEpisode: String(grant.fencingToken) };
    }
    if (this.mode === 'read') {
      this.endedWriteFound(grant);
      this.endedReadFound(grant);
    }
    const held = super.held(grant, leaseMs, options, grantSentAt);
    const hold = this.hold;
    if (hold && this.mode === 'write') hold.writeHolds += 1;
    if (hold && this.mode === 'read' && grant.readEpisode !== undefined) hold.readEpisode = grant.readEpisode;
    return held;
  }

  /**
   * A read grant of another read episode than the one the owner's hold record counts: the owner's
   * reads had ended in Redis (deleted, flushed, lost) and this grant began new ones, maybe after a
   * writer of another owner entered and left. The bodies counting on the ended reads are told, and
   * the grant starts a record of its own (docs/owners-and-reentry.md#the-owner-model).
   */
  private endedReadFound(grant: Grant): void {
    const counted = this.engine.holds.get(this.lockKey, this.ownerId);
    // Only while the record counts reads: once its last read was released, the next read begins another episode.
    const reads = counted ? counted.holdCount - counted.writeHolds : 0;
    if (!counted || reads <= 0 || counted.readEpisode === undefined || grant.readEpisode === undefined || counted.readEpisode === grant.readEpisode) return;
    this.episodeEnded(counted, LOST_READ_ENDED);
  }

  /**
   * A read grant counted on a hold record that counts write holds is a downgrade only if Redis says
   * the owner is still that writer. Otherwise the write had ended in Redis (deleted, flushed, lost
   * with a restart) before the watchdog could tell, and Redis granted a new read hold: counting it as
   * a downgrade would hide the loss (a read grant has no token for \`endedEpisodeFound\` to compare),
   * and the writer's bodies would go on beside other processes' readers. They are told now (the
   * record's signal aborts), as \`endedEpisodeFound\` does; the read is counted on the same record, so
   * the body that took it starts told too, and the release that ends the count releases it.
   */
  private endedWriteFound(grant: Grant): void {
    const counted = this.hold;
    if (!counted || counted.writeHolds === 0 || counted.aborted) return;
    const { writerFence } = grant;
    let reason: string | undefined;
    if (writerFence === undefined) reason = LOST_WRITE_ENDED;
    // The owner writes again, in another episode than the one counted here (never seen so far: a
    // write grant with a new token is found by \`endedEpisodeFound\` first).
    else if (writerFence !== 0 && counted.fencingToken !== undefined && writerFence !== counted.fencingToken) reason = LOST_NEW_EPISODE;
    if (reason === undefined) return;
    this.episodeEnded(counted, reason);
  }

  /** A write hold is counted off first, as the hold itself is: a wrong count only hides an edge, never adds one. */
  override releasing(hold: HeldLock): void {
    if (this.mode === 'write' && hold.writeHolds > 0) hold.writeHolds -= 1;
  }

  /** What a release of `hold` names to Redis: the write's fencing token, or the read episode. */
  override episodeOf(hold: HeldLock): string | undefined {
    if (this.mode === 'read') return hold.readEpisode;
    return hold.fencingToken === undefined ? undefined : String(hold.fencingToken);
  }

  /** A read hold has no fencing token. */
  override getFencingToken(): number | undefined {
    return this.mode === 'write' ? super.getFencingToken() : undefined;
  }

  protected renewalCall(leaseMs: number, exact = false): ScriptCall {
    return new ReadWriteRenewal(this, leaseMs, exact ? 0 : 1);
  }

  /**
   * A waiter that gives up leaves the line, and gives back in the same script a hold a grant made to
   * it meanwhile (its message may not have arrived): the lock goes onward in line order.
   */
  protected override leaveLine(requestId: string, entry: string): Promise<unknown> {
    const { client, publishCommand, fenceMemoryMs, options } = this.engine;
    const keys = [this.lockKey, this.leasesKey, LockKeys.channel(this.lockKey), ...this.lineKeys];
    const args = [entry, this.ownerId, requestId, publishCommand, WAKE_ALL, options.fairLockWaiterTimeout, fenceMemoryMs];
    return this.engine.call(this.name, (ticket) => leaveScript.run(client, keys, args, ticket)).catch(() => undefined);
  }

  /** The owner's hold record counts both modes: a read release by a writer answers "the other mode". */
  override releaseEpisode(requestId: string, ticket: CallTicket, hold: HeldLock): Promise<ModeReleaseResult> {
    // A release names its episode (the write's token, the read's start): an ended one never releases a later hold.
    return this.releaseIn(this.mode, requestId, '', ticket, this.episodeOf(hold) ?? '');
  }

  /** At shutdown the shared hold record may count holds of either mode: release whichever remains. */
  protected override async releaseAnyHold(): Promise<unknown> {
    const { ids } = this.engine;
    const result = await this.releaseIn(this.mode, ids.nextRequest());
    if (result !== HOLDS_OTHER_MODE) return result;
    return this.releaseIn(this.mode === 'read' ? 'write' : 'read', ids.nextRequest());
  }

  /** True while the lock is held in this view's mode, by anyone. */
  override async isLocked(): Promise<boolean> {
    return (await this.engine.call(this.name, () => this.engine.client.hget(this.lockKey, 'mode'))) === this.mode;
  }

  override async isHeldByCurrentOwner(): Promise<boolean> {
    return (await this.getHoldCount()) > 0;
  }

  /** This owner's holds in this view's mode (a hold whose lease ran out counts as gone). */
  override async getHoldCount(): Promise<number> {
    const keys = [this.lockKey, this.leasesKey];
    return Number(
      await this.engine.call(this.name, (ticket) => holdCountScript.run(this.engine.client, keys, [this.ownerId, this.mode], ticket)),
    );
  }

  /**
   * Deletes the lock if it is held in this view's mode, whoever holds it (for the write view with
   * `fencingToken`: only while the writer with that token holds it, its lease not ended); the
   * waiters in line get it in line order, or, with nobody in line, every waiter is woken. A read
   * hold has no token: the read view rejects `fencingToken` with a `TypeError`.
   */
  override async forceUnlock(release?: ForceUnlockOptions): Promise<boolean> {
    const token = forceReleaseToken('forceUnlock', release?.fencingToken);
    if (token && this.mode === 'read') throw new TypeError(FORCE_RELEASE_NO_TOKEN('forceUnlock', 'a read lock'));
    const { client, publishCommand, fenceMemoryMs, options } = this.engine;
    const keys = [this.lockKey, this.leasesKey, LockKeys.channel(this.lockKey), ...this.lineKeys];
    const args = [this.mode, publishCommand, WAKE_ALL, options.fairLockWaiterTimeout, fenceMemoryMs, ...(token ? [token] : [])];
    return (await this.engine.call(this.name, (ticket) => forceReleaseScript.run(client, keys, args, ticket))) === 1;
  }

  private async releaseIn(mode: ReadWriteMode, requestId: string, grantedBy = '', ticket?: CallTicket, heldToken = ''): Promise<ModeReleaseResult> {
    const { client, publishCommand, releaseRecordTtlMs, fenceMemoryMs, options } = this.engine;
    const { release, releaseMessage } = modeScripts[mode];
    return (await release.run(
      client,
      [
        this.lockKey,
        this.leasesKey,
        LockKeys.channel(this.lockKey),
        LockKeys.releaseRecord(this.lockKey, `${this.ownerId}:${requestId}`),
        ...this.lineKeys,
      ],
      [this.ownerId, releaseRecordTtlMs, publishCommand, releaseMessage, grantedBy, options.fairLockWaiterTimeout, fenceMemoryMs, heldToken],
      ticket,
    )) as ModeReleaseResult;
  }
}
