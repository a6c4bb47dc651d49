/** Every text the lock board logs or puts in an error, in one place (docs/lock-board.md). */
import { quoteName, show } from '../lock.messages';

export const BOARD_OPTION = (option: string, expected: string, value: unknown): string =>
  `LockBoardModule option "${option}" must be ${expected} (got ${show(value)})`;

export const BOARD_GUARD_REQUIRED =
  'LockBoardModule option "guard" is required: a Nest guard (a class or an instance with canActivate) that decides who may see the board, ' +
  'or guard: false to open it to anyone who can reach the app (local development only)';

export const BOARD_NEEDS_LOCK_MODULE =
  'LockBoardModule needs LockModule in the same application: import LockModule.forRoot(...) (or forRootAsync) beside LockBoardModule.forRoot(...)';

export const BOARD_GUARD_UNRESOLVED = (name: string, error: unknown): string =>
  `LockBoardModule could not create its guard ${name}: ${error instanceof Error ? error.message : String(error)}`;

/** Board start error with a LockModule in layout 'redisson' (the text is the layout's). */
export { REDISSON_BOARD_FORCE_RELEASE as BOARD_FORCE_RELEASE_REDISSON } from '../messages/redisson.messages';

export const BOARD_FORCE_RELEASE_OFF = 'Force release is off on this board (LockBoardModule option allowForceRelease)';

export const BOARD_CROSS_SITE =
  'Force release takes only a same-origin request from the board page (header X-Lock-Board: 1, no cross-site Origin or Sec-Fetch-Site)';

export const BOARD_CROSS_SITE_READ = 'The lock board answers only its own page and tools, not another site (Origin or Sec-Fetch-Site)';

export const BOARD_BAD_RELEASE = (field: string, expected: string, value: unknown): string =>
  `Force release: "${field}" must be ${expected} (got ${show(value)})`;

export const BOARD_READ_HOLD = 'Force release: a read hold has no fencing token, so the board cannot name it safely; release the write hold, or use forceUnlock() in code';

export const BOARD_WALK_PARTIAL = (scanned: number, total: number | undefined): string =>
  total && total > 0
    ? `Partial view: this refresh walked ${scanned.toLocaleString('en-US')} keys of about ${total.toLocaleString('en-US')}; ` +
      'the walk goes on where it stopped at the next refresh, so a lock taken behind it shows when the walk comes round again.'
    : `Partial view: this refresh walked ${scanned.toLocaleString('en-US')} keys; the walk goes on where it stopped at the next refresh.`;

export const BOARD_WALK_TRUNCATED = (shown: number, found: number): string =>
  `Showing ${shown.toLocaleString('en-US')} of ${found.toLocaleString('en-US')} locks found (the refresh budget); narrow the filter to see the others.`;

export const BOARD_WALK_NAMES_FULL = (limit: number): string =>
  `The walk remembers ${limit.toLocaleString('en-US')} names; past them it keeps only names a filter asks for (a few thousand more), so narrow the filter to find the others.`;

export const BOARD_FILTER_WAITING = 'Too many different filters are in use at once: this one waits for its turn (a later refresh).';

export const BOARD_FILTER_UNCHECKED = (count: number): string =>
  `The filter has not been checked against ${count.toLocaleString('en-US')} names yet (a refresh bounds its work); later refreshes do.`;

export const BOARD_UNAVAILABLE = (error: unknown): string =>
  `Redis could not be read: ${error instanceof Error ? error.message : String(error)}. The last view is kept.`;

/** Longest request or Redis text a board log line quotes whole; a longer one is cut, saying how long it was. */
export const BOARD_LOG_QUOTE_LIMIT = 200;

/**
 * What a log line must not carry as itself: controls, format characters (bidi overrides, zero-width),
 * line and paragraph separators (U+2028 ends a line for many log viewers), spaces other than the
 * ASCII one, default-ignorable, private-use and unassigned code points, lone surrogates.
 */
const UNSEEN_IN_LOG = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Zs}\p{Cs}\p{Co}\p{Cn}\p{Default_Ignorable_Code_Point}]/gu;

const escapeUnits = (text: string): string =>
  Array.from({ length: text.length }, (_, i) => `\\u${text.charCodeAt(i).toString(16).padStart(4, '0')}`).join('');

/**
 * `value` (a lock name, holder id or user from a request or from Redis) quoted for a log line: a JSON
 * string whose every invisible character is written as `\uXXXX` (an astral one as its two escaped
 * surrogates, as JSON writes it), so the line shows exactly what was asked and nothing can end it
 * or reorder it; cut to 200 characters (never inside a surrogate pair), saying how long it was.
 */
export const quoteForLog = (value: string): string => {
  let shown = value.length <= BOARD_LOG_QUOTE_LIMIT ? value : value.slice(0, BOARD_LOG_QUOTE_LIMIT);
  if (shown.length < value.length && /[\uD800-\uDBFF]$/.test(shown)) shown = shown.slice(0, -1);
  const quoted = JSON.stringify(shown).replace(UNSEEN_IN_LOG, (ch) => (ch === ' ' ? ch : escapeUnits(ch)));
  return shown.length < value.length ? `${quoted}... (${value.length} characters)` : quoted;
};

/** The audit line of a force release (each name, holder and user quoted by `quoteForLog`); `outcome` says what happened. */
export const BOARD_RELEASE_AUDIT = (kind: string, name: string, ownerId: string, token: number, who: string, outcome: string): string =>
  `force release of ${kind} ${quoteForLog(name)} (holder ${quoteForLog(ownerId)}, fencing token ${token}) by ${who}: ${outcome}`;

/** The 500 of a force release whose `actor` option threw or gave no string (the error itself is logged, not sent). */
export const BOARD_ACTOR_FAILED = 'Force release refused: the board could not tell who is asking (see the server log); nothing was released';

export const BOARD_ACTOR_FAILED_LOG = (error: unknown, value?: unknown): string =>
  error === undefined
    ? `LockBoardModule option "actor" gave ${show(value)}, not a string (or undefined to use request.user): a force release was refused, nothing was released`
    : `LockBoardModule option "actor" threw: a force release was refused, nothing was released: ${error instanceof Error ? error.message : String(error)}`;

/** What a force release found instead of the hold it was asked to release, after `it` / the lock's name. */
export const BOARD_WHY_FREE = 'is not held (it was released since the board showed it)';
export const BOARD_WHY_KIND = (shown: string, asked: string): string => `is a ${shown} lock, not a ${asked} lock`;
export const BOARD_WHY_HOLDER = (holder: string, asked: string): string => `is held by ${quoteForLog(holder)} now, not by ${quoteForLog(asked)}`;
export const BOARD_WHY_NO_PERMITS = (asked: string): string => `has no holder ${quoteForLog(asked)} now (it gave its permits back, or lost them)`;
export const BOARD_WHY_TOKEN = (token: number | undefined, asked: number): string =>
  `is held with fencing token ${token ?? 'none'} now, not ${asked} (taken again since the board showed it)`;
export const BOARD_WHY_CHANGED = 'changed between the check and the release, which released nothing';
export const BOARD_WHY_READ_HELD = 'is held for reading (a read hold has no fencing token to name it by)';

/** The 409 of a force release that found the lock not as the board showed it. */
export const BOARD_NOT_AS_SHOWN = (name: string, why: string): string => `Not released: ${quoteForLog(name)} ${why}`;

/** The audit line's outcome: what was checked and released, or why nothing was. */
export const BOARD_AUDIT_RELEASED = (shownKind: string, askedKind: string): string =>
  `released (checked first: a ${shownKind} hold of that holder with that token${shownKind === askedKind ? '' : `; asked as ${askedKind}`})`;
export const BOARD_AUDIT_REFUSED = (why: string): string => `refused, it ${why}`;

export const BOARD_GUARD_OFF_LOOPBACK = (path: string): string =>
  `The lock board at "${path}" has no guard (guard: false): anyone who can reach this app at localhost, 127.0.0.1 or [::1] sees every lock name and holder ` +
  '(a request by any other host name is refused, so a page of another site cannot reach it by DNS rebinding). Use it for local development only.';

export const BOARD_NOT_LOOPBACK = (host: string | undefined): string =>
  `The lock board has no guard (guard: false), so it answers only requests to a loopback name (localhost, *.localhost, 127.0.0.1, [::1]); ` +
  `this one was for ${host === undefined ? 'no Host' : quoteForLog(host)}. To reach the board by another name, give LockBoardModule a guard.`;
