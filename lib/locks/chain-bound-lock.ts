import { LockNotHeldError, ReentryEndedError } from '../errors';
import type { LockEngine } from '../engine/lock-engine';
import type { HeldLock } from '../runtime/held-locks';
import type { ChainBinding } from '../runtime/owner-context';
import type { ForceUnlockOptions, LockOptions, LockRunContext, TryLockOptions } from './lock';
import type { OwnedLock } from './owned-lock';

/** A lock that can be told to only re-enter its owner's hold, and that says when that hold ended. */
export interface ReenteringLock extends OwnedLock {
  reenterOnly: boolean;
  /** The hold a re-entry-only attempt found ended in Redis: forgotten here, its bodies told. */
  reentryEnded(hold: HeldLock): void;
  /** Whether one of this object's handles counts on an episode that ended (its `unlock` settles that first). */
  readonly owesEndedHold: boolean;
}

/**
 * A lock asked for inside a body's call chain that holds it (`run`, a decorator, or `getLock` there):
 * the owner model of docs/owners-and-reentry.md#the-owner-model. Each time it asks, it re-enters the
 * body's hold if the body still runs and its hold is current (decided then, not when the object was
 * made), and Redis re-enters only a hold the owner has now, never a new one. Otherwise (the body
 * ended, its hold was lost or given up, or Redis says it ended) it asks as an owner of its own, and
 * waits like anyone. Each acquisition is released through the lock that took it (its handle).
 */
export class ChainBoundLock implements OwnedLock {
  private own: OwnedLock | undefined;
  /** The lock each acquisition not yet released went through, in order. */
  private readonly taken: OwnedLock[] = [];

  constructor(
    private readonly binding: ChainBinding,
    /** The lock as the body's owner, re-entry only. */
    private readonly body: ReenteringLock,
    /** Makes the lock as an owner of its own (once). */
    private readonly makeOwn: () => OwnedLock,
  ) {}

  get name(): string {
    return this.body.name;
  }

  get lockKey(): string {
    return this.body.lockKey;
  }

  get runName(): string | readonly string[] {
    return this.body.runName;
  }

  /** The owner this object would ask as now. */
  get ownerId(): string {
    return this.target().ownerId;
  }

  get hold(): HeldLock | undefined {
    return (this.lastTaken() ?? this.target()).hold;
  }

  async lock(options?: LockOptions): Promise<void> {
    if (await this.reenter(options)) return;
    const own = this.ownLock();
    await own.lock(options);
    this.taken.push(own);
  }

  async tryLock(options?: TryLockOptions): Promise<boolean> {
    const reentered = await this.reenter(options);
    if (reentered !== undefined) return reentered;
    const own = this.ownLock();
    const acquired = await own.tryLock(options);
    if (acquired) this.taken.push(own);
    return acquired;
  }

  /**
   * Re-enters the body's hold while the binding is current: true when re-entered, false when the
   * one attempt did not get it (a reply heard after its lease ended), undefined when the hold had
   * ended (then its bodies are told, and the caller asks as an owner of its own).
   */
  private async reenter(options: LockOptions | undefined): Promise<boolean | undefined> {
    if (!this.binding.current) return undefined;
    try {
      if (!(await this.body.tryLock({ ...options, waitTime: 0 }))) return false;
    } catch (error) {
      if (!(error instanceof ReentryEndedError)) throw error;
      this.body.reentryEnded(this.binding.hold);
      return undefined;
    }
    this.taken.push(this.body);
    return true;
  }

  unlock(): Promise<void> {
    const lock = this.takeLast(true);
    return lock ? lock.unlock() : Promise.reject(new LockNotHeldError(this.name));
  }

  keepHeldFor(ms: number): Promise<void> {
    const lock = this.takeLast(false);
    return lock ? lock.keepHeldFor(ms) : Promise.reject(new LockNotHeldError(this.name));
  }

  heldLocks(): readonly HeldLock[] {
    return this.lastTaken()?.heldLocks() ?? [];
  }

  runContext(): LockRunContext {
    return (this.lastTaken() ?? this.target()).runContext();
  }

  rearm(leaseMs: number): Promise<boolean> {
    return (this.lastTaken() ?? this.target()).rearm(leaseMs);
  }

  getFencingToken(): number | undefined {
    return (this.lastTaken() ?? this.target()).getFencingToken();
  }

  forceUnlock(options?: ForceUnlockOptions): Promise<boolean> {
    return this.body.forceUnlock(options);
  }

  isLocked(): Promise<boolean> {
    return this.body.isLocked();
  }

  remainTimeToLive(): Promise<number> {
    return this.body.remainTimeToLive();
  }

  isHeldByCurrentOwner(): Promise<boolean> {
    return this.target().isHeldByCurrentOwner();
  }

  getHoldCount(): Promise<number> {
    return this.target().getHoldCount();
  }

  private target(): OwnedLock {
    return this.binding.current ? this.body : this.ownLock();
  }

  private ownLock(): OwnedLock {
    return (this.own ??= this.makeOwn());
  }

  private lastTaken(): OwnedLock | undefined {
    return this.taken[this.taken.length - 1];
  }

  /** Takes out the lock the next release goes through: with `owedFirst`, one owing an ended hold; else the last. */
  private takeLast(owedFirst: boolean): OwnedLock | undefined {
    const { taken } = this;
    let index = taken.length - 1;
    if (owedFirst) {
      const owed = taken.findIndex((lock) => (lock as Partial<ReenteringLock>).owesEndedHold === true);
      if (owed >= 0) index = owed;
    }
    return index >= 0 ? taken.splice(index, 1)[0] : undefined;
  }
}

/**
 * The lock of `identity` for the current call chain: bound to the body that holds it (a
 * `ChainBoundLock`), or, when none does, a lock of `fallbackOwner` or of a new owner.
 */
export function lockForChain(
  engine: LockEngine,
  identity: string,
  fallbackOwner: string | undefined,
  make: (ownerId: string) => ReenteringLock,
): OwnedLock {
  const binding = engine.ownerContext.bindingOf(identity);
  const ownOwner = (): string => fallbackOwner ?? engine.ids.nextOwner();
  if (!binding) return make(ownOwner());
  const body = make(binding.ownerId);
  body.reenterOnly = true;
  return new ChainBoundLock(binding, body, () => make(ownOwner()));
}
