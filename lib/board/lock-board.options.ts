import type { CanActivate, Type } from '@nestjs/common';
import { BOARD_GUARD_REQUIRED, BOARD_OPTION } from './lock-board.messages';

/**
 * Waiters the board lists per lock or semaphore (its inspections pass it as `waiterLimit`): the
 * first ones in line, with how many wait in all (`waiterCount`), so one lock with a very long line
 * costs Redis and every viewer no more than a short one (docs/lock-board.md#cost).
 */
export const BOARD_WAITERS_PER_LOCK = 50;

/** How much of Redis one refresh may read (docs/lock-board.md#cost). */
export interface LockBoardBudget {
  /** Keys the walk looks at per refresh (SCAN, 1,000 per call); default 20,000, 1,000 to 1,000,000. */
  keysPerRefresh?: number;
  /** Locks inspected per refresh (one small script call each); default 1,000, 1 to 10,000. */
  locksPerRefresh?: number;
}

/** `LockBoardModule.forRoot()`'s options (and what `forRootAsync`'s factory returns). */
export interface LockBoardOptions {
  /**
   * Who may see the board: a Nest guard class (created with the module's injector) or instance.
   * Required; `false` opens the board to anyone who can reach the app by a loopback name
   * (`localhost`, `*.localhost`, `127.0.0.1`, `[::1]`; any other `Host` is refused, against DNS
   * rebinding), and says so at start (local development only). The app's global guards apply as
   * well: the board is a Nest controller.
   */
  guard: CanActivate | Type<CanActivate> | false;
  /** Lets an operator force-release a hold from the page (default false: the board is read-only). */
  allowForceRelease?: boolean;
  /** How often the page refreshes and the shared walk may run, in ms (default 2,000; 250 to 60,000). */
  refreshMs?: number;
  /** How much of Redis one refresh may read. */
  budget?: LockBoardBudget;
  /**
   * Who made a request, for the audit line of a force release. Default: what the guard put on
   * `request.user` (its `id`, `sub`, `username`, `name` or `email`), else `anonymous`.
   */
  actor?: (request: unknown) => string | undefined;
}

/** Options fixed when the module is defined (routes are registered before any factory runs). */
export interface LockBoardExtras {
  /** The board's route under the app's global prefix (default `lock-board`). */
  path?: string;
}

export interface ResolvedLockBoardOptions {
  readonly guard: CanActivate | Type<CanActivate> | false;
  readonly allowForceRelease: boolean;
  readonly refreshMs: number;
  readonly keysPerRefresh: number;
  readonly locksPerRefresh: number;
  readonly actor: ((request: unknown) => string | undefined) | undefined;
}

export const DEFAULT_BOARD_PATH = 'lock-board';
const PATH_SEGMENT = /^[A-Za-z0-9._~-]+$/;

/** The route, checked when the module is defined: URL path segments only (no parameters, no wildcards). */
export function resolveBoardPath(path: unknown): string {
  if (path === undefined) return DEFAULT_BOARD_PATH;
  const trimmed = typeof path === 'string' ? path.replace(/^\/+|\/+$/g, '') : undefined;
  if (trimmed === undefined || trimmed === '' || !trimmed.split('/').every((segment) => PATH_SEGMENT.test(segment) && segment !== '.' && segment !== '..')) {
    throw new TypeError(BOARD_OPTION('path', 'a route of plain path segments such as "ops/locks" (letters, digits, . _ ~ -)', path));
  }
  return trimmed;
}

const KNOWN = ['guard', 'allowForceRelease', 'refreshMs', 'budget', 'actor'];

function integerIn(option: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new TypeError(BOARD_OPTION(option, `an integer from ${min.toLocaleString('en-US')} to ${max.toLocaleString('en-US')}`, value));
  }
  return value;
}

function isGuard(value: unknown): value is CanActivate | Type<CanActivate> {
  if (typeof value === 'function') return typeof (value.prototype as { canActivate?: unknown } | undefined)?.canActivate === 'function';
  return typeof value === 'object' && value !== null && typeof (value as { canActivate?: unknown }).canActivate === 'function';
}

/** Checks the options when the module starts (before any request): a mistake names the option. */
export function resolveLockBoardOptions(options: LockBoardOptions | undefined): ResolvedLockBoardOptions {
  if (!options || typeof options !== 'object') throw new TypeError(BOARD_GUARD_REQUIRED);
  for (const key of Object.keys(options)) {
    if (!KNOWN.includes(key)) throw new TypeError(`LockBoardModule option "${key}" is not a known option (known: path, ${KNOWN.join(', ')})`);
  }
  const { guard } = options;
  if (guard === undefined || guard === null || guard === (true as unknown)) throw new TypeError(BOARD_GUARD_REQUIRED);
  if (guard !== false && !isGuard(guard)) throw new TypeError(BOARD_OPTION('guard', 'a Nest guard class or instance (with canActivate), or false', guard));
  if (options.allowForceRelease !== undefined && typeof options.allowForceRelease !== 'boolean') {
    throw new TypeError(BOARD_OPTION('allowForceRelease', 'true or false', options.allowForceRelease));
  }
  if (options.actor !== undefined && typeof options.actor !== 'function') throw new TypeError(BOARD_OPTION('actor', 'a function of the request', options.actor));
  const budget = options.budget ?? {};
  if (typeof budget !== 'object' || budget === null) throw new TypeError(BOARD_OPTION('budget', 'an object { keysPerRefresh?, locksPerRefresh? }', budget));
  return {
    guard,
    allowForceRelease: options.allowForceRelease ?? false,
    refreshMs: integerIn('refreshMs', options.refreshMs, 2_000, 250, 60_000),
    keysPerRefresh: integerIn('budget.keysPerRefresh', budget.keysPerRefresh, 20_000, 1_000, 1_000_000),
    locksPerRefresh: integerIn('budget.locksPerRefresh', budget.locksPerRefresh, 1_000, 1, 10_000),
    actor: options.actor,
  };
}
