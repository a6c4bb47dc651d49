/** How every message quotes a caller's text: lock names (a request value, maybe huge) and option values. */

/** Text from a caller (a lock name may be a request value) is quoted with at most this many characters. */
export const QUOTED_NAME_LIMIT = 200;

/**
 * A lock name as every message, log line and error body quotes it: JSON-quoted (a newline in a name
 * cannot forge a log line), cut to its first 200 characters with its length said when longer.
 */
export const quoteName = (name: string): string =>
  name.length <= QUOTED_NAME_LIMIT
    ? JSON.stringify(name)
    : `${JSON.stringify(name.slice(0, QUOTED_NAME_LIMIT))}... (${name.length} characters)`;

/** A name cut as `quoteName` cuts it, for the `lockName` of an error body. */
export const shortName = (name: string): string => (name.length <= QUOTED_NAME_LIMIT ? name : name.slice(0, QUOTED_NAME_LIMIT));

export const show = (value: unknown): string => {
  if (typeof value === 'string') return quoteName(value);
  // JSON.stringify turns these into null, which hides the mistake.
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
};

/** Names a lock in messages: one name, or the names of a multi-lock. */
export const lockNames = (lockName: string | readonly string[]): string =>
  typeof lockName === 'string' ? quoteName(lockName) : `[${lockName.map(quoteName).join(', ')}]`;
