import { LockKeys } from '../redis/lock-keys';
import type { CallTicket } from '../redis/bounded-call';
import type { ScriptCall } from '../redis/lua-script';
import { WAKE_ONE } from '../redis/unlock-subscriber';
import { AttemptResult, attemptResult, BaseLock, ReleaseResult } from './base-lock';

/** The reentrant lock: a hash of owner -> hold count whose TTL is the lease (DESIGN §4). */
export class ReentrantLock extends BaseLock {
  readonly kind = 'reentrant';

  protected async attempt(leaseMs: number, requestId: string, _joinLine: boolean, ticket?: CallTicket): Promise<AttemptResult> {
    const { scripts, client, fenceMemoryMs } = this.engine;
    return attemptResult(
      await scripts.reentrantAcquire.run(
        client,
        [this.lockKey, LockKeys.fence(this.lockKey)],
        [leaseMs, this.ownerId, requestId, fenceMemoryMs],
        ticket,
      ),
    );
  }

  protected async releaseOne(requestId: string, grantedBy = '', ticket?: CallTicket): Promise<ReleaseResult> {
    const { scripts, client, options, publishCommand } = this.engine;
    const hold = this.hold;
    return (await scripts.reentrantRelease.run(
      client,
      [this.lockKey, LockKeys.channel(this.lockKey), LockKeys.releaseRecord(this.lockKey, `${this.ownerId}:${requestId}`)],
      [hold?.leaseMs ?? options.watchdogTimeout, this.ownerId, this.engine.releaseRecordTtlMs, publishCommand, WAKE_ONE, grantedBy],
      ticket,
    )) as ReleaseResult;
  }

  protected renewalCall(leaseMs: number): ScriptCall {
    return { script: this.engine.scripts.reentrantRenew, keys: [this.lockKey], args: [leaseMs, this.ownerId] };
  }
}
