import { LockError } from '../errors';
import { SEMAPHORE_LIMIT_MISMATCH } from '../lock.messages';

/**
 * A semaphore was asked with a `permits` limit other than the one it is in use with. The limit is
 * stored with the semaphore while anyone holds or waits for its permits; callers that disagree get
 * this error instead of silently changing it. Once the semaphore is idle (nobody holds or waits),
 * the next caller's limit is taken.
 */
export class SemaphoreLimitError extends LockError {
  constructor(
    /** The semaphore's name. */
    readonly semaphoreName: string,
    /** The limit this caller asked with. */
    readonly permits: number,
    /** The limit the semaphore is in use with. */
    readonly storedPermits: number,
  ) {
    super(SEMAPHORE_LIMIT_MISMATCH(semaphoreName, permits, storedPermits));
  }
}
