import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { LockBoardExtras, LockBoardOptions } from './lock-board.options';
import { boardAssetsControllerAt, boardControllerAt } from './lock-board.controller';
import { resolveBoardPath } from './lock-board.options';
import { BOARD_PATH } from './lock-board.tokens';

export const {
  ConfigurableModuleClass: ConfigurableLockBoardModule,
  /** The options given to `LockBoardModule.forRoot()` / `forRootAsync()`'s factory, as given. */
  MODULE_OPTIONS_TOKEN: LOCK_BOARD_OPTIONS,
  OPTIONS_TYPE: LOCK_BOARD_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: LOCK_BOARD_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<LockBoardOptions>()
  .setClassMethodName('forRoot')
  // The route is part of the module's definition (Nest registers routes before any factory runs),
  // so `path` is given to forRoot and forRootAsync alike, and checked here, when the app is defined.
  .setExtras<LockBoardExtras>({ path: undefined }, (definition, extras) => {
    const path = resolveBoardPath(extras.path);
    return {
      ...definition,
      controllers: [boardControllerAt(path), boardAssetsControllerAt(path)],
      providers: [...(definition.providers ?? []), { provide: BOARD_PATH, useValue: path }],
    };
  })
  .build();
