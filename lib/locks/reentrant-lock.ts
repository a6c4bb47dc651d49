import { LockKeys } from '../redis/lock-keys';
import type { CallTicket } from '../redis/bounded-call';
import { LuaScript, type ScriptCall } from '../redis/lua-script';
import { WAKE_ONE } from '../redis/unlock-messages';
import { BaseLock } from './base-lock';
import { AttemptResult, attemptResult, lineRequest, reentryAnswer, ReleaseResult } from './attempt-results';
import type { ForceUnlockOptions } from './lock';
import { forceReleaseToken } from '../validators';

const lineScripts = {
  leave: LuaScript.named('line-leave'),
  forceRelease: LuaScript.named('lock-force-release'),
};

/**
 * The reentrant lock: a hash of owner -> hold count whose TTL is the lease, and a line of waiters in
 * Redis while anyone waits (docs/architecture.md#reentrant-lock). A waiter joins the line with the
 * attempt it sends right after its first miss (a newcomer seated first: with its first attempt); a release hands the lock to the first live waiter inside the releasing
 * script and names it in the message, so the waiter holds the lock when it wakes (one trip) and a
 * holder that asks again at once queues behind it. Without waiters nothing of the line exists and an
 * attempt is the plain one.
 */
export class ReentrantLock extends BaseLock {
  readonly kind: 'reentrant' | 'fair' = 'reentrant';

  // The line's keys are made for each call, not kept: a lock object that waits would carry them all
  // along, and 20,000 waiters add up.
  protected get lineKeys(): [string, string, string, string] {
    return LockKeys.lineKeys(this.lockKey);
  }

  /**
   * @internal This process's channel for this lock: a grant to one of its waiters, and the notice
   * that the waiter ahead was granted, come here and nowhere else (docs/hand-off-protocol.md).
   */
  override get waitChannel(): string {
    return LockKeys.clientChannel(this.lockKey, this.engine.ids.clientId);
  }

  /** @internal The lock's own channel, heard on the same seats (see `Contender.sharedChannel`). */
  get sharedChannel(): string | undefined {
    return LockKeys.channel(this.lockKey);
  }

  /** @internal This acquisition's entry in the line: the release that hands the lock over names it. */
  lineEntry(requestId: string, leaseMs: number, join = 0): string {
    return `${this.ownerId} ${lineRequest(requestId, join)} ${leaseMs} ${this.waiterKind}`;
  }

  /** How a waiter is woken: 'p' on the lock's channel, 'f' on a channel of its own (a fair lock). */
  protected get waiterKind(): 'p' | 'f' {
    return 'p';
  }

  /**
   * @internal A plain lock's first attempt does not join the line: most find the lock free, and the
   * call stays as small as it was before the line existed. A waiter joins with its next attempt, made
   * right after (a holder may take the lock back once in between).
   */
  get joinsLineOnFirstAttempt(): boolean {
    return false;
  }

  // Plain promise chains rather than async functions: one promise and one frame less per call.
  protected acquireScript(leaseMs: number, requestId: string, joinLine: boolean, ticket?: CallTicket, attemptStamp = '', join = 0): Promise<AttemptResult> {
    const { scripts, client, fenceMemoryMs, publishCommand, options } = this.engine;
    if (!joinLine || this.reenterOnly) {
      const lockKey = this.lockKey;
      const keys = [lockKey, LockKeys.line(lockKey), LockKeys.fence(lockKey), LockKeys.lineDeadlines(lockKey), LockKeys.lineSeen(lockKey)];
      const args = [leaseMs, this.ownerId, requestId, fenceMemoryMs, publishCommand, WAKE_ONE, options.fairLockWaiterTimeout];
      if (!this.reenterOnly) return scripts.reentrantFirstAttempt.run(client, keys, args, ticket, attemptResult);
      args.push('1');
      return scripts.reentrantFirstAttempt.run(client, keys, args, ticket, attemptResult).then((result) => reentryAnswer(this, result));
    }
    return scripts.reentrantAcquire.run(
      client,
      [this.lockKey, ...this.lineKeys],
      [
        leaseMs,
        this.ownerId,
        requestId,
        fenceMemoryMs,
        this.lineEntry(requestId, leaseMs, join),
        options.fairLockWaiterTimeout,
        publishCommand,
        WAKE_ONE,
        attemptStamp,
      ],
      ticket,
      attemptResult,
    );
  }

  protected releaseOne(requestId: string, grantedBy = '', ticket?: CallTicket, heldToken = ''): Promise<ReleaseResult> {
    const { scripts, client, publishCommand, fenceMemoryMs, options } = this.engine;
    return scripts.reentrantRelease.run(
      client,
      [this.lockKey, LockKeys.releaseRecord(this.lockKey, `${this.ownerId}:${requestId}`), ...this.lineKeys],
      [this.ownerId, this.engine.releaseRecordTtlMs, publishCommand, WAKE_ONE, grantedBy, options.fairLockWaiterTimeout, fenceMemoryMs, heldToken],
      ticket,
    ) as Promise<ReleaseResult>;
  }

  protected renewalCall(leaseMs: number, exact = false, token?: number): ScriptCall {
    const args = [leaseMs, this.ownerId, exact ? 0 : 1];
    if (token !== undefined) args.push(token);
    return { script: this.engine.scripts.reentrantRenew, keys: [this.lockKey], args };
  }


  /**
   * A waiter that gives up leaves the line, and gives back in the same script a lock a release
   * handed to it meanwhile (its message may not have arrived): the next waiter gets it.
   */
  protected override leaveLine(requestId: string, entry: string): Promise<unknown> {
    const { client, publishCommand, fenceMemoryMs, options } = this.engine;
    const args = [entry, this.ownerId, requestId, publishCommand, WAKE_ONE, options.fairLockWaiterTimeout, fenceMemoryMs];
    return this.engine.call(this.name, (ticket) => lineScripts.leave.run(client, [this.lockKey, ...this.lineKeys], args, ticket)).catch(() => undefined);
  }

  override async forceUnlock(release?: ForceUnlockOptions): Promise<boolean> {
    const token = forceReleaseToken('forceUnlock', release?.fencingToken);
    const { client, publishCommand, fenceMemoryMs, options, wakeMessageOnForceUnlock } = this.engine;
    // Without a token the script gets today's four arguments.
    const args = [publishCommand, wakeMessageOnForceUnlock, options.fairLockWaiterTimeout, fenceMemoryMs, ...(token ? [token] : [])];
    const keys = [this.lockKey, ...this.lineKeys];
    return (await this.engine.call(this.name, (ticket) => lineScripts.forceRelease.run(client, keys, args, ticket))) === 1;
  }
}
