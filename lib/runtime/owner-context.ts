import { AsyncLocalStorage } from 'node:async_hooks';
import type { HeldLock } from './held-locks';
import type { HeldLocks } from './hold-registry';
import type { LockRunContext } from './run-context';

/**
 * One storage for every module instance in the process: a body of one instance that waits for a
 * lock of another still makes its whole call chain wait (docs/deadlocks.md). Each frame says whose
 * it is, and the owner rules read only their own instance's frames.
 */
const chainStorage = new AsyncLocalStorage<OwnerFrame>();

/** The innermost frame of the current call chain, of any module instance (ended ones included). */
export const innermostFrame = (): OwnerFrame | undefined => chainStorage.getStore();

/**
 * One locked body in its call chain: the holds its run recorded, its run context, and the frame of
 * the body it was started in. Everything the body starts (awaited or not: timers, intervals, event
 * handlers, promises nobody awaited) keeps this frame, so it stops counting once the body ended
 * (`end`), not when the last continuation is gone.
 */
export class OwnerFrame {
  /** Set when the body settled: the frame then records nothing (docs/architecture.md#owner-model). */
  ended = false;

  constructor(
    /** The innermost enclosing frame not ended when this one began (ended ones are dropped as found). */
    public parent: OwnerFrame | undefined,
    readonly holds: readonly HeldLock[],
    readonly current: LockRunContext,
    /** The hold registry of the module instance whose body this is. */
    readonly registry: HeldLocks,
    /** That module instance, for the deadlock check's records (docs/deadlocks.md). */
    readonly site: unknown,
  ) {}

  /** Called once when the body settles (the deadlock check deletes the records it wrote for it). */
  private endListeners: Array<() => void> | undefined;

  end(): void {
    this.ended = true;
    const listeners = this.endListeners;
    this.endListeners = undefined;
    if (listeners) for (const listener of listeners) listener();
  }

  /** Runs `listener` when the body settles (at once if it has). */
  onEnd(listener: () => void): void {
    if (this.ended) return listener();
    (this.endListeners ??= []).push(listener);
  }
}

/**
 * A body's hold that a lock object made in its call chain re-enters (docs/owners-and-reentry.md#the-owner-model):
 * only while the body runs and the hold is current and not told lost, checked each time the object
 * asks, not when it was made.
 */
export class ChainBinding {
  constructor(
    readonly ownerId: string,
    readonly hold: HeldLock,
    readonly frame: OwnerFrame,
    private readonly registry: HeldLocks,
  ) {}

  get current(): boolean {
    return !this.frame.ended && !this.hold.aborted && this.registry.isCurrent(this.hold);
  }
}

/**
 * The locks held by the current call chain. Asking again for a lock an enclosing body holds reuses
 * its owner (re-entry); any other lock gets a new owner, so concurrent branches of one chain still
 * exclude each other. An entry counts only while its body runs and the hold it recorded is the
 * registry's current one (not released, lost or given back): a continuation that outlives the body
 * is a new owner, excluded like anyone else. Contexts are entered with `run`, never `enterWith`, so
 * nothing leaks into the caller. It also knows the innermost running body's lock (`current()`).
 */
export class OwnerContext {
  constructor(
    private readonly registry: HeldLocks,
    /** The module instance frames are opened for (`OwnerFrame.site`). */
    private readonly site: unknown = undefined,
  ) {}

  /**
   * What a lock object asked for `lockKey` inside this call chain would re-enter: the nearest
   * running body's hold of it, while that hold is current; undefined otherwise (a new owner). The
   * binding is checked again each time the object asks (`ChainBinding.current`).
   */
  bindingOf(lockKey: string): ChainBinding | undefined {
    for (let frame = chainStorage.getStore(); frame; frame = frame.parent) {
      if (frame.ended || frame.registry !== this.registry) continue;
      for (const hold of frame.holds) {
        // The nearest record of the key decides: a hold that ended there makes a new owner.
        if (hold.lockKey !== lockKey) continue;
        const binding = new ChainBinding(hold.ownerId, hold, frame, this.registry);
        return binding.current ? binding : undefined;
      }
    }
    return undefined;
  }

  /** The innermost running body's lock: `{ name, signal, fencingToken }`, or undefined. */
  current(): LockRunContext | undefined {
    for (let frame = chainStorage.getStore(); frame; frame = frame.parent) {
      if (!frame.ended && frame.registry === this.registry) return frame.current;
    }
    return undefined;
  }

  /**
   * A frame for a body about to run under `holds` with `current` as its context, inside the call
   * chain's innermost running body. Ended frames are cut out of the chain on the way, so a chain of
   * continuations (a timer that runs a lock that sets the next timer...) does not grow without end.
   */
  open(holds: readonly HeldLock[], current: LockRunContext): OwnerFrame {
    let parent = chainStorage.getStore();
    while (parent?.ended) parent = parent.parent;
    for (let frame = parent; frame; frame = frame.parent) {
      while (frame.parent?.ended) frame.parent = frame.parent.parent;
    }
    return new OwnerFrame(parent, holds, current, this.registry, this.site);
  }

  /** Runs `fn` inside `frame` (from `open`); the caller ends the frame when the body settles. */
  runIn<T>(frame: OwnerFrame, fn: () => T): T {
    return chainStorage.run(frame, fn);
  }
}
