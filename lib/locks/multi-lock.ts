import { FORCE_RELEASE_NO_TOKEN, MULTI_LOCK_EMPTY } from '../lock.messages';
import { MEMBER_ACQUISITION, observeAcquire, type AcquisitionOptions, type LockTelemetry } from '../metrics/lock-telemetry';
import { cancellable } from '../runtime/cancellation';
import type { HeldLock } from '../runtime/held-locks';
import { HOLDS_ALSO_WAITING } from '../deadlocks/wait-node';
import { monotonicNow } from '../monotonic-clock';
import type { ForceUnlockOptions, Lock, LockOptions, LockRunContext, TryLockOptions } from './lock';
import type { OwnedLock } from './owned-lock';
import type { RunnableLock } from './runnable-lock';

/**
 * All-or-nothing over several locks of any kind. Locks are taken in a stable order (by Redis key),
 * so two multi-locks over overlapping sets can never deadlock; on failure everything taken is
 * released.
 */
export class MultiLock implements Lock, RunnableLock {
  /** @internal The members, deduplicated, in the order they are taken. */
  readonly locks: readonly OwnedLock[];
  /** Always `multi`: the kind telemetry and `instanceof`-free code see. */
  readonly kind = 'multi';

  /** @internal Built by `LockService.getMultiLock` and the run helpers. */
  constructor(
    locks: readonly OwnedLock[],
    /** The module's telemetry: the multi-lock's acquisition is measured as one (kind `multi`). */
    private readonly telemetry?: LockTelemetry,
  ) {
    if (locks.length === 0) throw new TypeError(MULTI_LOCK_EMPTY('A multi-lock'));
    const unique = new Map<string, OwnedLock>();
    for (const lock of locks) if (!unique.has(lock.lockKey)) unique.set(lock.lockKey, lock);
    this.locks = [...unique.values()].sort((a, b) => (a.lockKey < b.lockKey ? -1 : a.lockKey > b.lockKey ? 1 : 0));
  }

  /** The member names joined with commas. */
  get name(): string {
    return this.names.join(',');
  }

  /** The member names, deduplicated, in the order they are taken (by Redis key). */
  get names(): string[] {
    return this.locks.map((lock) => lock.name);
  }

  get runName(): readonly string[] {
    return this.names;
  }

  /** Every member's hold: inside the run, each member re-enters on its own. */
  heldLocks(): readonly HeldLock[] {
    const holds: HeldLock[] = [];
    for (const member of this.locks) {
      const hold = member.hold;
      if (hold) holds.push(hold);
    }
    return holds;
  }

  runContext(): LockRunContext {
    return { name: this.names, signal: this.signal, fencingToken: undefined, fencingTokens: this.getFencingTokens() };
  }

  async lock(options?: LockOptions): Promise<void> {
    await this.observedAcquire(Number.POSITIVE_INFINITY, options);
  }

  tryLock(options?: TryLockOptions): Promise<boolean> {
    return this.observedAcquire(options?.waitTime ?? 0, options);
  }

  /**
   * Aborting `options.signal` rejects at once; the member waiting then leaves its wait, and the
   * members already taken are released behind the rejection.
   */
  private observedAcquire(waitMs: number, options: LockOptions | undefined): Promise<boolean> {
    return observeAcquire(this.telemetry, this.kind, this.names, options, () => undefined, () =>
      cancellable(options?.signal, () => this.acquire(waitMs, options)),
    );
  }

  /** Releases every member; the first error (if any) is rethrown after all were tried. */
  async unlock(): Promise<void> {
    const outcomes = await Promise.allSettled([...this.locks].reverse().map((lock) => lock.unlock()));
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** `keepHeldFor` on every member; the first error (if any) is rethrown after all were tried. */
  async keepHeldFor(ms: number): Promise<void> {
    const outcomes = await Promise.allSettled([...this.locks].reverse().map((lock) => lock.keepHeldFor(ms)));
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /**
   * `forceUnlock` on every member; true when any released. A multi-lock has one token per member:
   * `fencingToken` is refused (force-unlock each member with its own).
   */
  async forceUnlock(release?: ForceUnlockOptions): Promise<boolean> {
    if (release?.fencingToken !== undefined) throw new TypeError(FORCE_RELEASE_NO_TOKEN('forceUnlock', 'a multi-lock (one token per member: force-unlock each member with its own)'));
    const results = await Promise.all(this.locks.map((lock) => lock.forceUnlock()));
    return results.some(Boolean);
  }

  /** True when every member is locked. */
  async isLocked(): Promise<boolean> {
    return (await Promise.all(this.locks.map((lock) => lock.isLocked()))).every(Boolean);
  }

  /** True when the current owner holds every member. */
  async isHeldByCurrentOwner(): Promise<boolean> {
    return (await Promise.all(this.locks.map((lock) => lock.isHeldByCurrentOwner()))).every(Boolean);
  }

  /** The smallest hold count of the members. */
  async getHoldCount(): Promise<number> {
    return Math.min(...(await Promise.all(this.locks.map((lock) => lock.getHoldCount()))));
  }

  /** The smallest remaining lease of the members (-2 when any is free). */
  async remainTimeToLive(): Promise<number> {
    const ttls = await Promise.all(this.locks.map((lock) => lock.remainTimeToLive()));
    return ttls.some((ttl) => ttl === -2) ? -2 : Math.min(...ttls);
  }

  /** A multi-lock has no one token: each member has its own (`getFencingTokens()`). */
  getFencingToken(): undefined {
    return undefined;
  }

  /** Each held member's fencing token, by member name (members without one are left out). */
  getFencingTokens(): Record<string, number> {
    const tokens: Record<string, number> = {};
    for (const lock of this.locks) {
      const token = lock.getFencingToken();
      if (token !== undefined) tokens[lock.name] = token;
    }
    return tokens;
  }

  /** Aborted when any member is lost. */
  get signal(): AbortSignal {
    return AbortSignal.any(this.locks.map((lock) => lock.hold?.signal ?? new AbortController().signal));
  }

  /**
   * Takes every member in order within one wait. Members are taken one by one, so the first ones'
   * leases run while later ones are awaited: once the last is granted, each member must still be
   * held here (not lost) and, with a `leaseTime`, is re-armed to a full lease from now, so no member
   * expires before the others' leases end. When one cannot be, everything is let go and the
   * acquisition starts over within what remains of the wait.
   */
  private async acquire(waitMs: number, options: LockOptions | undefined): Promise<boolean> {
    const deadline = monotonicNow() + waitMs;
    for (;;) {
      const outcome = await this.acquireOnce(deadline, options);
      if (outcome !== 'start-over') return outcome;
      options?.signal?.throwIfAborted();
      if (monotonicNow() >= deadline) return false;
    }
  }

  private async acquireOnce(deadline: number, options: LockOptions | undefined): Promise<boolean | 'start-over'> {
    const taken: OwnedLock[] = [];
    const { leaseTime, signal, metricName } = options ?? {};
    let outcome: boolean | 'start-over' = false;
    try {
      for (const lock of this.locks) {
        signal?.throwIfAborted();
        const remaining = Math.max(0, deadline - monotonicNow());
        const memberOptions: TryLockOptions & AcquisitionOptions & { [HOLDS_ALSO_WAITING]: () => HeldLock[] } = {
          waitTime: remaining,
          leaseTime,
          signal,
          metricName,
          [MEMBER_ACQUISITION]: true,
          // The members taken already wait with this one (docs/deadlocks.md).
          [HOLDS_ALSO_WAITING]: () => taken.flatMap((member) => (member.hold ? [member.hold] : [])),
        };
        if (!(await lock.tryLock(memberOptions))) break;
        taken.push(lock);
      }
      if (taken.length === this.locks.length) outcome = (await this.allStillHeld(leaseTime)) ? true : 'start-over';
    } finally {
      if (outcome !== true) {
        await Promise.allSettled(taken.reverse().map((lock) => lock.unlock()));
      }
    }
    return outcome;
  }

  /**
   * Whether every member is still held; with a `leaseTime`, the members before the last (whose lease
   * began last) are re-armed for a full lease from now.
   */
  private async allStillHeld(leaseTime: number | undefined): Promise<boolean> {
    if (leaseTime === undefined) return this.locks.every((lock) => lock.hold !== undefined && !lock.hold.aborted);
    const earlier = this.locks.slice(0, -1);
    const leaseMs = Math.ceil(leaseTime);
    const rearmed = await Promise.all(earlier.map((lock) => lock.rearm(leaseMs).catch(() => false)));
    const last = this.locks[this.locks.length - 1].hold;
    return rearmed.every(Boolean) && last !== undefined && !last.aborted;
  }
}
