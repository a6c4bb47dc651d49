/** Validated board options with defaults filled in. */
export const RESOLVED_BOARD_OPTIONS = Symbol('RESOLVED_LOCK_BOARD_OPTIONS');
/** The board's route, without slashes at either end (for the page's asset URLs and the start-up warning). */
export const BOARD_PATH = Symbol('LOCK_BOARD_PATH');
