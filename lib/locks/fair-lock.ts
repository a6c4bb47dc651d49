import { LockKeys } from '../redis/lock-keys';
import { ReentrantLock } from './reentrant-lock';

/**
 * The fair lock (docs/architecture.md#reentrant-lock): the reentrant lock itself (same hash, same
 * line, same scripts, so the plain and the fair lock of one name exclude each other and share one
 * order), whose waiters sleep on channels of their own and retry at least three times per
 * `fairLockWaiterTimeout`: the retries are heartbeats, so a crashed waiter leaves the line after that
 * timeout rather than after the lock's TTL plus it, as a plain waiter does.
 */
export class FairLock extends ReentrantLock {
  override readonly kind = 'fair';

  protected override get waiterKind(): 'f' {
    return 'f';
  }

  /** A fair acquisition that waits takes its place in line with its first attempt. */
  override get joinsLineOnFirstAttempt(): boolean {
    return true;
  }

  /** Each waiter's own channel: a release hands over to the head of the line and wakes nobody else. */
  override get waitChannel(): string {
    return LockKeys.waiterChannel(this.lockKey, this.ownerId);
  }

  /** A fair waiter hears only its own channel. */
  override get sharedChannel(): undefined {
    return undefined;
  }

  /** Retries double as heartbeats: at least three per waiter timeout, so only dead waiters are dropped. */
  override get maxSleepMs(): number {
    return Math.max(1, Math.floor(this.engine.options.fairLockWaiterTimeout / 3));
  }
}
