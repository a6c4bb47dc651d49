import { LockKeys } from '../redis/lock-keys';
import type { CallTicket } from '../redis/bounded-call';
import { LuaScript, type ScriptCall } from '../redis/lua-script';
import { WAKE_ONE } from '../redis/unlock-subscriber';
import { AttemptResult, attemptResult, BaseLock, ReleaseResult } from './base-lock';

const fairScripts = {
  acquire: LuaScript.named('fair-acquire'),
  release: LuaScript.named('fair-release'),
  leave: LuaScript.named('fair-leave'),
  forceRelease: LuaScript.named('fair-force-release'),
};

/**
 * The fair lock (docs/architecture.md#reentrant-lock): the reentrant lock's hash (so the plain and the fair lock of one name
 * exclude each other) plus a FIFO line of waiters and their deadlines on the server's clock. Each
 * waiter sleeps on a channel of its own, so a release wakes only the head of the line; every retry
 * refreshes the waiter's deadline, which makes the retries heartbeats and lets a crashed waiter
 * drop out of the line after `fairLockWaiterTimeout`.
 */
export class FairLock extends BaseLock {
  readonly kind = 'fair';

  private get lineKeys(): [string, string, string] {
    return [this.lockKey, LockKeys.fairLine(this.lockKey), LockKeys.fairDeadlines(this.lockKey)];
  }

  protected async acquireScript(leaseMs: number, requestId: string, joinLine: boolean, ticket?: CallTicket): Promise<AttemptResult> {
    const { client, options, fenceMemoryMs } = this.engine;
    return attemptResult(
      await fairScripts.acquire.run(
        client,
        [...this.lineKeys, LockKeys.fence(this.lockKey)],
        [leaseMs, this.ownerId, requestId, options.fairLockWaiterTimeout, joinLine ? 1 : 0, fenceMemoryMs],
        ticket,
      ),
    );
  }

  protected async releaseOne(requestId: string, grantedBy = '', ticket?: CallTicket): Promise<ReleaseResult> {
    const { client, publishCommand, releaseRecordTtlMs } = this.engine;
    return (await fairScripts.release.run(
      client,
      [...this.lineKeys, LockKeys.releaseRecord(this.lockKey, `${this.ownerId}:${requestId}`)],
      [
        this.ownerId,
        releaseRecordTtlMs,
        publishCommand,
        this.waiterChannelPrefix,
        LockKeys.channel(this.lockKey),
        WAKE_ONE,
        grantedBy,
      ],
      ticket,
    )) as ReleaseResult;
  }

  /** The hash is the plain lock's, so is its renewal. */
  protected renewalCall(leaseMs: number, exact = false): ScriptCall {
    return { script: this.engine.scripts.reentrantRenew, keys: [this.lockKey], args: [leaseMs, this.ownerId, exact ? 0 : 1] };
  }

  /** Each waiter's own channel: a release wakes the head of the line and nobody else. */
  override get waitChannel(): string {
    return LockKeys.waiterChannel(this.lockKey, this.ownerId);
  }

  /** Retries double as heartbeats: at least three per waiter timeout, so only dead waiters are dropped. */
  override get maxSleepMs(): number {
    return Math.max(1, Math.floor(this.engine.options.fairLockWaiterTimeout / 3));
  }

  /** A waiter that gives up leaves the line at once (and wakes the next one if it stood at the head). */
  protected override leaveLine(): Promise<unknown> {
    const { client, publishCommand } = this.engine;
    const args = [this.ownerId, publishCommand, this.waiterChannelPrefix, WAKE_ONE];
    return this.engine.call(this.name, () => fairScripts.leave.run(client, this.lineKeys, args)).catch(() => undefined);
  }

  override async forceUnlock(): Promise<boolean> {
    const { client, publishCommand } = this.engine;
    const args = [publishCommand, this.waiterChannelPrefix, LockKeys.channel(this.lockKey), WAKE_ONE];
    return (await this.engine.call(this.name, (ticket) => fairScripts.forceRelease.run(client, this.lineKeys, args, ticket))) === 1;
  }

  private get waiterChannelPrefix(): string {
    return LockKeys.waiterChannel(this.lockKey, '');
  }
}
