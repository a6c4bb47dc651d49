import type { LoggerService } from '@nestjs/common';
import { LOCK_LOST, LOST_HANDED_OVER_GONE } from '../lock.messages';
import { monotonicNow } from '../monotonic-clock';
import type { CallTicket } from '../redis/bounded-call';
import type { ScriptCall } from '../redis/lua-script';
import type { RedisClient } from '../redis/redis-client';
import type { HeldLock } from './held-locks';
import type { HeldLocks } from './hold-registry';

/** The first pause before a confirmation that got no answer is resent (ms); it doubles each time. */
const FIRST_RETRY_MS = 50;
/** The longest pause between two confirmations (ms): a stall that ends is noticed this soon after. */
const MAX_RETRY_MS = 500;

/** What a confirmation needs of its module instance (its `LockEngine`): the holds, a bounded call, the log. */
export interface HandOverEngine {
  readonly client: RedisClient;
  readonly holds: HeldLocks;
  readonly logger: Pick<LoggerService, 'warn'>;
  call<T>(lockName: string, work: (ticket: CallTicket) => Promise<T>): Promise<T>;
}

/**
 * A lock (or permits) a release handed over starts on a short lease, so a waiter that died before
 * hearing of it blocks nobody long. Its new holder makes it the full lease with `renewal` (the
 * kind's extend-only renewal) a third into the short lease: the body already runs, and most
 * hand-offs of a busy lock are released by then and never send it. Redis answering "not held" loses
 * the hold (its signal aborts). A confirmation that got no answer (a timeout, a lost connection, an
 * error reply) is resent, after 50 ms doubling up to 500 ms, as a watchdog renewal is, until it gets
 * through or the short lease (less the drift margin) ends: a Redis stall shorter than the grant lease
 * never loses the hold. Resending is safe: the renewal only ever extends this owner's own hold. Until
 * a confirmation gets through, the hold ends by its own timer when the short lease does
 * (`HeldLock.awaitingConfirmation`), with a reason that says so (see `docs/architecture.md#hand-off`).
 */
export function confirmHandOver(engine: HandOverEngine, name: string, hold: HeldLock, leaseMs: number, renewal: ScriptCall): void {
  const { holds } = engine;
  let retryMs = FIRST_RETRY_MS;
  // Still to confirm: current, not aborted, not yet confirmed (a watchdog round may have done it).
  const pending = (): boolean => holds.isCurrent(hold) && !hold.aborted && hold.awaitingConfirmation;
  const confirm = (): void => {
    if (!pending()) return;
    const { script, keys, args } = renewal;
    const sentAt = monotonicNow();
    engine.call(name, (ticket) => script.run(engine.client, keys, args, ticket)).then(
      (renewed) => {
        if (!holds.isCurrent(hold)) return;
        if (Number(renewed) !== 1) {
          holds.forget(hold);
          hold.lose(LOST_HANDED_OVER_GONE);
          engine.logger.warn(LOCK_LOST(name, LOST_HANDED_OVER_GONE));
          return;
        }
        holds.renewed(hold, sentAt, leaseMs);
      },
      () => {
        // The outcome is unknown: resend while the grant lease lasts. When it ends unconfirmed, the
        // hold's lease-end timer loses it (LOST_HAND_OVER_UNCONFIRMED).
        if (!pending()) return;
        const now = monotonicNow();
        const delay = Math.min(retryMs, MAX_RETRY_MS);
        retryMs *= 2;
        if (hold.leaseEndedBy(now + delay)) return;
        setTimeout(confirm, delay).unref?.();
      },
    );
  };
  setTimeout(confirm, Math.max(0, (hold.expiresAt - monotonicNow()) / 3)).unref?.();
}
