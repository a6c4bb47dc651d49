import type { WaitTarget } from '../deadlocks/wait-node';
import type { LockEngine } from '../engine/lock-engine';

/** What an acquisition asks a semaphore for, as both layouts' requests describe it. */
export interface PermitWait {
  readonly engine: LockEngine;
  readonly name: string;
  /** The semaphore's key in this process's hold registry. */
  readonly lockKey: string;
  /** The acquisition's owner (its permit id). */
  readonly ownerId: string;
  /** Permits asked for. */
  readonly need: number;
  /** The semaphore's limit. */
  readonly total: number;
  /** False where no wait-for records are kept (layout 'redisson': docs/redisson-interop.md#deadlocks). */
  readonly crossProcess: boolean;
}

/** What a wait for permits waits for, as the deadlock check sees it (docs/deadlocks.md). */
export function permitWaitTarget({ engine, name, lockKey, ownerId, need, total, crossProcess }: PermitWait): WaitTarget {
  return {
    engine,
    kind: 'semaphore',
    name,
    lockKey,
    ownerId,
    mode: 'permits',
    need,
    total,
    crossProcess,
  };
}

