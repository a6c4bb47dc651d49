import { LockKeys } from '../redis/lock-keys';
import type { ScriptCall } from '../redis/lua-script';
import { WAKE_ONE } from '../redis/unlock-subscriber';
import { AttemptResult, BaseLock, ReleaseResult } from './base-lock';

/** The reentrant lock: a hash of owner -> hold count whose TTL is the lease (DESIGN §4). */
export class ReentrantLock extends BaseLock {
  protected async attempt(leaseMs: number, requestId: string): Promise<AttemptResult> {
    const { scripts, client } = this.engine;
    return (await scripts.reentrantAcquire.run(client, [this.lockKey], [leaseMs, this.ownerId, requestId])) as AttemptResult;
  }

  protected async releaseOne(requestId: string): Promise<ReleaseResult> {
    const { scripts, client, options, publishCommand } = this.engine;
    const hold = this.hold;
    return (await scripts.reentrantRelease.run(
      client,
      [this.lockKey, LockKeys.channel(this.lockKey), LockKeys.releaseRecord(this.lockKey, `${this.ownerId}:${requestId}`)],
      [hold?.leaseMs ?? options.watchdogTimeout, this.ownerId, this.engine.releaseRecordTtlMs, publishCommand, WAKE_ONE],
    )) as ReleaseResult;
  }

  protected renewalCall(leaseMs: number): ScriptCall {
    return { script: this.engine.scripts.reentrantRenew, keys: [this.lockKey], args: [leaseMs, this.ownerId] };
  }
}
