import { Module } from '@nestjs/common';
import { BoardForceRelease } from './board-force-release';
import { BoardSnapshots } from './board-snapshots';
import { LockBoardGuard } from './lock-board.guard';
import { ConfigurableLockBoardModule, LOCK_BOARD_OPTIONS } from './lock-board.module-definition';
import { resolveLockBoardOptions, type LockBoardOptions } from './lock-board.options';
import { RESOLVED_BOARD_OPTIONS } from './lock-board.tokens';

/**
 * The lock board (docs/lock-board.md): `LockBoardModule.forRoot({ guard, path?, allowForceRelease?,
 * refreshMs?, budget? })` or `forRootAsync({ path?, imports, inject, useFactory })`, beside
 * `LockModule`. Options are checked when the module starts; a missing guard fails the start.
 */
@Module({
  providers: [
    {
      provide: RESOLVED_BOARD_OPTIONS,
      inject: [LOCK_BOARD_OPTIONS],
      useFactory: (options: LockBoardOptions) => resolveLockBoardOptions(options),
    },
    LockBoardGuard,
    BoardSnapshots,
    BoardForceRelease,
  ],
})
export class LockBoardModule extends ConfigurableLockBoardModule {}
