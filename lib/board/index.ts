export { LockBoardModule } from './lock-board.module';
export { LOCK_BOARD_OPTIONS } from './lock-board.module-definition';
export type { LockBoardOptions, LockBoardExtras, LockBoardBudget } from './lock-board.options';
export type { BoardSnapshot } from './board-snapshots';
export type { BoardContention, ContentionPoint } from './contention-history';
export type { ContentionCounters } from '../metrics/contention-stats';
