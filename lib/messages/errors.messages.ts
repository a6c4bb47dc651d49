import { lockNames, quoteName } from './quoting';

/** The error classes' own texts (errors.ts), and Redis failures in plain words (errors.ts, lib/http). */

// --- the errors' own texts (errors.ts) ---

export const LOCK_NOT_ACQUIRED = (lockName: string | readonly string[], waitTime: number): string =>
  `Lock ${lockNames(lockName)} was not acquired within ${waitTime} ms`;

export const LOCK_NOT_HELD = (name: string): string => `Lock ${quoteName(name)} is not held by the current owner`;

export const LOCK_WAS_LOST = (name: string, reason: string): string => `Lock ${quoteName(name)} was lost: ${reason}`;

export const LOCK_UPGRADE_DEADLOCK = (name: string): string =>
  `Write lock ${quoteName(name)} was requested while holding only its read lock; ` +
  'upgrading would deadlock: release the read lock first';

/** One step of a deadlock's cycle as the error's message shows it. */
interface DeadlockStepText {
  readonly lock: string;
  readonly owner: string;
  readonly inLine?: boolean;
  readonly instance?: { readonly host: string; readonly pid: number };
}

/**
 * A wait refused as a deadlock: the locks of the cycle in order, each with whom it waits for
 * (docs/deadlocks.md). The first step is the refused call chain's own wait.
 */
export const LOCK_DEADLOCK = (steps: readonly DeadlockStepText[]): string => {
  const shown = steps.map((step, i) => {
    const where = step.instance ? ` on ${step.instance.host}:${step.instance.pid}` : '';
    const whose = i === steps.length - 1 ? 'this call chain' : `owner ${step.owner}${where}`;
    return `${quoteName(step.lock)} (${step.inLine ? 'behind' : 'held by'} ${whose})`;
  });
  const names = [...new Set(steps.map((step) => quoteName(step.lock)))];
  const fix =
    names.length > 1
      ? `take ${names.join(' and ')} in one order everywhere, or as one multi-lock`
      : `take ${names[0]} again through the call chain's own owner (it re-enters), or all at once`;
  return (
    `Deadlock: this call chain waits for ${shown.join(', which waits for ')}. ` +
    `The wait for ${quoteName(steps[0]?.lock ?? '')} was refused so the others can go on; ${fix}`
  );
};

/** `noAnswer`: Redis said nothing in time, so `cause` is a timeout, not an error Redis gave. */
export const LOCK_UNAVAILABLE = (lockName: string | readonly string[], cause: string, noAnswer: boolean): string =>
  `Lock ${lockNames(lockName)} is unavailable: Redis ${noAnswer ? `gave ${cause}` : `failed: ${cause}`}`;

export const MODULE_SHUTTING_DOWN = (name?: string): string =>
  name ? `LockModule is shutting down: wait for ${quoteName(name)} cancelled` : 'LockModule is shutting down';

export const SEMAPHORE_LIMIT_MISMATCH = (name: string, permits: number, storedPermits: number): string =>
  `Semaphore ${quoteName(name)} is in use with permits: ${storedPermits}, but was asked with permits: ${permits}; ` +
  'every caller must use the same limit (it can change once nobody holds or waits for the semaphore)';

// --- a key that is not the structure a lock expects; Redis failures in plain words (errors.ts, lib/http) ---

/** A Redis type, or a structure a lock kind keeps, in words: what LOCK_NAME_CONFLICT says. */
const STRUCTURE_WORDS: Readonly<Record<string, string>> = {
  string: 'a string',
  hash: 'a hash',
  list: 'a list',
  set: 'a set',
  zset: 'a sorted set',
  stream: 'a stream',
  lock: 'a lock',
  'read-write-lock': 'a read-write lock',
  'permit-counter': "a semaphore's permit counter",
  'permit-leases': "a semaphore's permit leases",
  'fair-queue': "a fair lock's queue",
  'fair-deadlines': "a fair lock's deadlines",
  'fence-token': 'a fencing token counter',
};
const structureWords = (code: string): string => STRUCTURE_WORDS[code] ?? `a ${code}`;

/**
 * A key held something else than the lock's structure, and nothing was written (the 409 body says
 * it). `key` and `holds` are unknown when Redis refused a command on the key (WRONGTYPE).
 */
export const LOCK_NAME_CONFLICT = (lockName: string | readonly string[], key: string | undefined, holds: string | undefined, expected: string): string =>
  key === undefined || holds === undefined
    ? `Lock ${lockNames(lockName)} cannot be used: one of its keys holds another type of value than ${structureWords(expected)}. ` +
      'Use lock names that no other key of this Redis uses'
    : `The key ${quoteName(key)} holds ${structureWords(holds)}, not ${structureWords(expected)}: lock ${lockNames(lockName)} cannot use it and changed nothing. ` +
      'Use lock names (key template prefixes) that no other key of this Redis uses';

/** Redis error codes (an error reply's first word) in plain words; any other code: REDIS_ANSWERED_ERROR. */
export const REDIS_ERROR_CODE_WORDS: Readonly<Record<string, string>> = {
  READONLY: 'Redis is a read-only replica',
  LOADING: 'Redis is loading its data',
  CLUSTERDOWN: 'the Redis Cluster is down',
  OOM: 'Redis is out of memory',
  BUSY: 'Redis is busy running a script',
  MASTERDOWN: 'Redis lost its master',
  TRYAGAIN: 'the Redis Cluster is moving the lock (try again)',
  MISCONF: 'Redis cannot save its data and refuses writes',
  NOPERM: "Redis refused this client's permissions",
  NOAUTH: 'Redis refused this client (authentication)',
  WRONGPASS: 'Redis refused this client (authentication)',
  NOREPLICAS: 'Redis has too few replicas to accept writes',
};
export const REDIS_ANSWERED_ERROR = 'Redis answered an error';
export const REDIS_UNREACHABLE = 'Redis could not be reached';
export const REDIS_NO_ANSWER = (timeoutMs: number): string => `Redis gave no answer within ${timeoutMs} ms`;

/** LockUnavailableError's message: the lock and what happened in plain words (its `cause` keeps Redis's own text). */
export const LOCK_UNAVAILABLE_PLAIN = (lockName: string | readonly string[], what: string): string => `Lock ${lockNames(lockName)} is unavailable: ${what}`;

/** The exception filter's log line for a 5xx answer: the internals the client does not see. */
export const LOCK_ERROR_CAUSE = (status: number, lockName: string | readonly string[], message: string, cause: string): string =>
  `Answered ${status} for lock ${lockNames(lockName)}: ${message}. Cause: ${cause} (logged once a minute per lock name)`;
