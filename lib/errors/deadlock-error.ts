import { LOCK_DEADLOCK } from '../lock.messages';
import { LockError, shortLockName, type LockErrorExtensions } from './lock-error';

/** A wait refused as a deadlock (docs/deadlocks.md). */

/** Where a deadlock's owner runs, when known: its module instance's host, pid and client name. */
export interface DeadlockInstance {
  /** The host name of the owner's process. */
  readonly host: string;
  /** The process id of the owner's process. */
  readonly pid: number;
  /** The `clientName` of the owner's module, when it has one. */
  readonly clientName?: string;
}

/**
 * One step of a deadlock's cycle: the call chain before it waits for `lock`, held by `owner` (or,
 * with `inLine`, behind `owner`'s wait in the lock's line, which cannot be passed).
 */
export interface DeadlockStep {
  /** The lock's name. */
  readonly lock: string;
  /** The owner id (`clientId:n`) waited for. */
  readonly owner: string;
  /** True when `owner` does not hold `lock` but waits ahead in its line. */
  readonly inLine?: boolean;
  /** Where `owner` runs, when known. */
  readonly instance?: DeadlockInstance;
}

/**
 * A wait that could never end: this call chain waits for a lock whose holder's call chain waits,
 * step by step, for a lock this chain holds. One wait per cycle is refused (the youngest: the one
 * that closed the cycle, see docs/deadlocks.md) and the others go on. `cycle` lists the steps in
 * order, starting with the refused wait's; the last step's owner is in the refused call chain.
 * `statusCode` 409 lets Nest's HTTP layer answer 409 Conflict; `extensions` carries `CONFLICT`.
 */
export class LockDeadlockError extends LockError {
  /** 409 Conflict, the HTTP status Nest answers with for this error. */
  readonly statusCode = 409;
  /** What GraphQL clients receive: the code `CONFLICT`, the status and the lock names. */
  readonly extensions: LockErrorExtensions;
  /** The names of the locks of the cycle, in order (a name appears once). */
  readonly lockName: readonly string[];
  constructor(
    /** The steps of the cycle, starting with the refused wait's. */
    readonly cycle: readonly DeadlockStep[],
  ) {
    super(LOCK_DEADLOCK(cycle));
    this.lockName = [...new Set(cycle.map((step) => step.lock))];
    this.extensions = { code: 'CONFLICT', statusCode: 409, lockName: shortLockName(this.lockName) };
  }
}
