import { LockKeys } from '../redis/lock-keys';
import { LuaScript, type ScriptCall } from '../redis/lua-script';
import { WAKE_ALL, WAKE_ONE } from '../redis/unlock-messages';
import type { HeldLock } from '../runtime/held-locks';
import type { HOLDS_OTHER_MODE, ReleaseResult } from './attempt-results';

// A read-write lock's scripts (lua/rw-*.lua) and its watchdog's renewal call, for its two views
// (`ReadWriteLockView`, read-write-lock-view.ts).

/** A view of a read-write lock: its read lock or its write lock. */
export type ReadWriteMode = 'read' | 'write';

/** rw-write-acquire.lua: the owner holds only the read lock, so waiting for the write lock would never end. */
export const UPGRADE_REFUSED = -3;
export type ModeReleaseResult = ReleaseResult | typeof HOLDS_OTHER_MODE;

export const modeScripts = {
  read: {
    acquire: LuaScript.named('rw-read-acquire'),
    release: LuaScript.named('rw-read-release'),
    // Only writers wait while readers hold: the last reader out admits one of them.
    releaseMessage: WAKE_ONE,
  },
  write: {
    acquire: LuaScript.named('rw-write-acquire'),
    release: LuaScript.named('rw-write-release'),
    // A writer leaving (or downgrading) admits many readers.
    releaseMessage: WAKE_ALL,
  },
} as const;
export const renewScript = LuaScript.named('rw-renew');
export const leaveScript = LuaScript.named('rw-line-leave');
export const holdCountScript = LuaScript.named('rw-hold-count');
export const forceReleaseScript = LuaScript.named('rw-force-release');

/** What a renewal reads of its view at each call (see `ReadWriteRenewal`). */
export interface RenewedView {
  readonly lockKey: string;
  readonly ownerId: string;
  readonly hold: HeldLock | undefined;
}

/**
 * The watchdog's (and `minHoldTime`'s, a multi-lock's re-arm's) call to rw-renew.lua for one owner.
 * Its arguments are read at each call: while the owner's hold record counts write holds, Redis is
 * asked to confirm the owner is still the writer, so a write that ended in Redis is found lost even
 * when a read hold of the owner remains there (a read alone would otherwise keep renewing). Once the
 * record's signal aborted (its bodies were told), whatever the owner still holds is renewed as any
 * hold is, until released.
 */
export class ReadWriteRenewal implements ScriptCall {
  readonly script = renewScript;
  readonly keys: readonly string[];

  constructor(
    private readonly view: RenewedView,
    private readonly leaseMs: number,
    private readonly extendOnly: 0 | 1,
  ) {
    this.keys = [view.lockKey, LockKeys.readWriteLeases(view.lockKey)];
  }

  get args(): Array<number | string> {
    const hold = this.view.hold;
    const writerRequired = hold !== undefined && hold.writeHolds > 0 && !hold.aborted;
    return [this.leaseMs, this.view.ownerId, this.extendOnly, writerRequired ? 1 : 0];
  }
}
