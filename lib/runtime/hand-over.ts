import { LOCK_LOST, LOST_HANDED_OVER_GONE } from '../lock.messages';
import type { ScriptCall } from '../redis/lua-script';
import type { HeldLock } from './held-locks';
import type { LockEngine } from './lock-engine';
import { monotonicNow } from './monotonic-clock';

const ignore = (): undefined => undefined;

/**
 * A lock (or permits) a release handed over starts on a short lease, so a waiter that died before
 * hearing of it blocks nobody long. Its new holder makes it the full lease with `renewal` (the
 * kind's extend-only renewal) a third into the short lease: the body already runs, and most
 * hand-offs of a busy lock are released by then and never send it. Redis answering "not held" loses
 * the hold (its signal aborts). Until a confirmation gets through, the hold ends by its own timer
 * when the short lease does (`HeldLock.awaitingConfirmation`).
 */
export function confirmHandOver(engine: LockEngine, name: string, hold: HeldLock, leaseMs: number, renewal: ScriptCall): void {
  const confirm = (): void => {
    const { holds } = engine;
    if (!holds.isCurrent(hold) || hold.aborted) return;
    const { script, keys, args } = renewal;
    const sentAt = monotonicNow();
    engine.call(name, (ticket) => script.run(engine.client, keys, args, ticket)).then((renewed) => {
      if (Number(renewed) !== 1) {
        if (!holds.isCurrent(hold)) return;
        holds.forget(hold);
        hold.lose(LOST_HANDED_OVER_GONE);
        engine.logger.warn(LOCK_LOST(name, LOST_HANDED_OVER_GONE));
        return;
      }
      if (holds.isCurrent(hold)) holds.renewed(hold, sentAt, leaseMs);
    }, ignore);
  };
  setTimeout(confirm, Math.max(0, (hold.expiresAt - monotonicNow()) / 3)).unref?.();
}
