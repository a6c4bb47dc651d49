import type { Abstract, Type } from '@nestjs/common';
import type { ModuleRef } from '@nestjs/core';
import { BOARD_NEEDS_LOCK_MODULE } from './lock-board.messages';

/**
 * A service of the app's `LockModule`, found from the board's module when it starts: the board
 * works only beside one, so without it the app's start fails (BOARD_NEEDS_LOCK_MODULE), not the
 * first request.
 */
export function lockModuleService<T>(moduleRef: ModuleRef, type: Type<T> | Abstract<T>): T {
  try {
    return moduleRef.get(type, { strict: false });
  } catch {
    throw new Error(BOARD_NEEDS_LOCK_MODULE);
  }
}
