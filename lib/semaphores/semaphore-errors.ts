import { LockError } from '../errors';

/**
 * A semaphore was asked with a `permits` limit other than the one it is in use with. The limit is
 * stored with the semaphore while anyone holds or waits for its permits; callers that disagree get
 * this error instead of silently changing it. Once the semaphore is idle (nobody holds or waits),
 * the next caller's limit is taken.
 */
export class SemaphoreLimitError extends LockError {
  constructor(
    readonly semaphoreName: string,
    /** The limit this caller asked with. */
    readonly permits: number,
    /** The limit the semaphore is in use with. */
    readonly storedPermits: number,
  ) {
    super(
      `Semaphore "${semaphoreName}" is in use with permits: ${storedPermits}, but was asked with permits: ${permits}; ` +
        'every caller must use the same limit (it can change once nobody holds or waits for the semaphore)',
    );
  }
}
