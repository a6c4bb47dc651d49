import { LockDeadlockError } from '../../errors';
import { monotonicNow } from '../../monotonic-clock';
import { chainHolds, HOLDS_ALSO_WAITING, nextLineSeq, WaitNode } from '../../deadlocks/wait-node';
import { cycleFrom, waitForGraph, youngestOf } from '../../deadlocks/wait-for-graph';
import type { HeldLock } from '../../runtime/held-locks';
import { AcquisitionState } from './acquisition-state';

/**
 * An acquisition's wait as the deadlock check sees it (docs/deadlocks.md): a node in the process's
 * wait-for graph from its first "busy" on, and its refusal when a cycle runs through it.
 */
export abstract class DeadlockCheckedWait<R> extends AcquisitionState<R> {
  /**
   * The lock is busy and the acquisition waits: registered with the process's wait-for graph (once),
   * checked for a cycle through this process's holds and waits at once, and across processes once
   * it has waited `deadlockCheckAfter` (docs/deadlocks.md). No cost until an attempt misses.
   */
  protected waiting(): void {
    const { contender } = this;
    let node = this.waitNode;
    if (!node) {
      const target = contender.waitTarget;
      if (!target) return;
      const alsoWaiting = (this.options as { [HOLDS_ALSO_WAITING]?: () => HeldLock[] } | undefined)?.[HOLDS_ALSO_WAITING]?.();
      node = new WaitNode(target, chainHolds(this.frame, alsoWaiting, contender.engine), monotonicNow(), (error) => this.refuse(error));
      this.waitNode = node;
      waitForGraph.add(node);
      if (node.chain.length > 0) contender.engine.deadlocks.watch(node);
    }
    if (this.lastSentJoined && node.lineSeq === undefined) {
      node.lineSeq = nextLineSeq();
      // The entry the attempt joined with (a first attempt joins before any seat is taken).
      node.lineEntry = this.lineEntry ?? contender.lineEntry?.(this.requestId, this.leaseMs, this.join) ?? contender.waiterId;
    }
    const found = waitForGraph.findCycle(node);
    if (!found) return;
    const victim = youngestOf(found.waits);
    victim.refuse(new LockDeadlockError(cycleFrom(found, victim)));
  }

  /**
   * Refused as a deadlock (by this wait's check or another's): ends as a cancellation does, and a
   * grant that arrives after is given back.
   */
  protected refuse(error: Error): void {
    if (this.ended) return;
    this.refusal = error;
    const { waiter } = this;
    if (!waiter) return this.end(true, error);
    this.contender.room.leave(waiter, false);
    waiter.cancel(error);
    this.end(true, error);
  }
}
