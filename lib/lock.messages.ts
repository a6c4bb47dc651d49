/** Every text the library logs or puts in a configuration error, in one place. */

const show = (value: unknown): string => {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
};

export const INVALID_OPTION = (option: string, expected: string, value: unknown): string =>
  `LockModule option "${option}" must be ${expected} (got ${show(value)})`;

export const UNKNOWN_OPTION = (option: string, known: readonly string[]): string =>
  `LockModule option "${option}" is not a known option (known: ${known.join(', ')})`;

export const LOCK_LOST = (name: string, reason: string): string =>
  `Lock "${name}" was lost (${reason}); its holder's signal is aborted`;

export const RENEWAL_FAILED = (name: string, error: unknown): string =>
  `Renewal of lock "${name}" failed, retrying until its lease runs out: ${String(error)}`;

export const RELEASE_FAILED = (name: string, error: unknown): string =>
  `Release of lock "${name}" failed; it will expire with its lease: ${String(error)}`;

export const RELEASE_FOUND_NOTHING = (name: string): string =>
  `Lock "${name}" was already gone when its holder released it (it had been lost)`;

export const SHUTDOWN_RELEASE_FAILED = (error: unknown): string =>
  `Releasing held locks at shutdown did not complete: ${String(error)}`;

export const INVALID_LOCK_NAME = (value: unknown): string =>
  `A lock name must be a non-empty string (got ${show(value)})`;

export const INVALID_TIME = (what: string, value: unknown): string =>
  `${what} must be a non-negative number of milliseconds (got ${show(value)})`;
