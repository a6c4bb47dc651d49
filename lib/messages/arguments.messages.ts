import { quoteName, show } from './quoting';

/** Refused options and arguments: module options, lock names, times, permits, list() patterns and counts. */

export const INVALID_OPTION = (option: string, expected: string, value: unknown): string =>
  `LockModule option "${option}" must be ${expected} (got ${show(value)})`;

export const UNKNOWN_OPTION = (option: string, known: readonly string[]): string =>
  `LockModule option "${option}" is not a known option (known: ${known.join(', ')})`;

export const INVALID_LOCK_NAME = (value: unknown): string =>
  `A lock name must be a non-empty string (got ${show(value)})`;

/** Gives the limit and the length, never the name (which may be huge, and is the caller's input). */
export const LOCK_NAME_TOO_LONG = (length: number, limit: number): string =>
  `A lock name may have at most ${limit} characters (maxNameLength); this one has ${length}`;

export const INVALID_TIME = (what: string, value: unknown): string =>
  `${what} must be a non-negative number of milliseconds (got ${show(value)})`;

export const INVALID_PERMITS = (value: unknown): string => `permits must be a whole number >= 1 (got ${String(value)})`;

export const INVALID_TAKE = (permits: number, take: unknown): string =>
  `take must be a whole number from 1 to the semaphore's permits (${permits}) (got ${String(take)})`;

// --- introspection (list) ---

export const GLOB_INVALID = (pattern: string, why: string): string => `list({ match: ${quoteName(pattern)} }) is refused: the pattern is invalid: ${why}`;

export const LIST_BAD_COUNT = (count: unknown, max: number): string =>
  `list({ count: ${show(count)} }) is refused: count must be a whole number from 1 to ${max} (keys SCAN looks at per round trip; a huge one blocks Redis)`;

export const INSTANCES_BAD_COUNT = (count: unknown, max: number): string =>
  `liveInstances({ count: ${show(count)} }) is refused: count must be a whole number from 1 to ${max} (instances listed per call)`;

export const GLOB_TOO_COSTLY = (pattern: string, why: string): string =>
  `list({ match: ${quoteName(pattern)} }) is refused: the pattern is too costly to match: ${why}`;

export const SEVERAL_GLOBAL_LOCK_MODULES = (count: number): string =>
  `This application registers ${count} LockModule instances as global (LockModule is global by default), ` +
  'so which one LockService and the decorators would use is not defined. Keep one global and give every ' +
  'other LockModule.forRoot()/forRootAsync() isGlobal: false; a module that imports one of those is ' +
  'served by it';
