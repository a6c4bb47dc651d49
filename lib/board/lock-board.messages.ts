/** Every text the lock board logs or puts in an error, in one place (docs/lock-board.md). */
import { quoteName, show } from '../lock.messages';

export const BOARD_OPTION = (option: string, expected: string, value: unknown): string =>
  `LockBoardModule option "${option}" must be ${expected} (got ${show(value)})`;

export const BOARD_GUARD_REQUIRED =
  'LockBoardModule option "guard" is required: a Nest guard (a class or an instance with canActivate) that decides who may see the board, ' +
  'or guard: false to open it to anyone who can reach the app (local development only)';

export const BOARD_GUARD_OFF = (path: string): string =>
  `The lock board at "${path}" has no guard (guard: false): anyone who can reach this app sees every lock name and holder. Use it for local development only.`;

export const BOARD_NEEDS_LOCK_MODULE =
  'LockBoardModule needs LockModule in the same application: import LockModule.forRoot(...) (or forRootAsync) beside LockBoardModule.forRoot(...)';

export const BOARD_GUARD_UNRESOLVED = (name: string, error: unknown): string =>
  `LockBoardModule could not create its guard ${name}: ${error instanceof Error ? error.message : String(error)}`;

export const BOARD_FORCE_RELEASE_OFF = 'Force release is off on this board (LockBoardModule option allowForceRelease)';

export const BOARD_CROSS_SITE =
  'Force release takes only a same-origin request from the board page (header X-Lock-Board: 1, no cross-site Origin or Sec-Fetch-Site)';

export const BOARD_CROSS_SITE_READ = 'The lock board answers only its own page and tools, not another site (Origin or Sec-Fetch-Site)';

export const BOARD_BAD_RELEASE = (field: string, expected: string, value: unknown): string =>
  `Force release: "${field}" must be ${expected} (got ${show(value)})`;

export const BOARD_READ_HOLD = 'Force release: a read hold has no fencing token, so the board cannot name it safely; release the write hold, or use forceUnlock() in code';

export const BOARD_RELEASE_REFUSED = (name: string, token: number): string =>
  `Not released: ${quoteName(name)} is no longer held with fencing token ${token} (it was released, or taken again since the board showed it)`;

export const BOARD_RELEASED_LOG = (kind: string, name: string, ownerId: string, token: number, who: string, released: boolean): string =>
  `force release of ${kind} ${quoteName(name)} (holder ${JSON.stringify(ownerId)}, fencing token ${token}) by ${who}: ${
    released ? 'released' : 'refused, the hold had changed'
  }`;

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
