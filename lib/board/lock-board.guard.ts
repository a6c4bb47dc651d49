import { Inject, Injectable, Logger, type CanActivate, type ExecutionContext, type OnModuleInit, type Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { BOARD_PATH, RESOLVED_BOARD_OPTIONS } from './lock-board.tokens';
import { BOARD_GUARD_OFF, BOARD_GUARD_UNRESOLVED } from './lock-board.messages';
import type { ResolvedLockBoardOptions } from './lock-board.options';

/**
 * The board's own guard on every route: it runs the guard the options name (after the app's global
 * guards, which apply as to any controller). A guard class is resolved when the module starts, from
 * the app's providers or created with the module's injector, so a guard that injects services works
 * and a guard that cannot be built fails the start, not the first request.
 */
@Injectable()
export class LockBoardGuard implements CanActivate, OnModuleInit {
  private delegate: CanActivate | undefined;

  constructor(
    @Inject(RESOLVED_BOARD_OPTIONS) private readonly options: ResolvedLockBoardOptions,
    @Inject(BOARD_PATH) private readonly path: string,
    private readonly moduleRef: ModuleRef,
  ) {}

  async onModuleInit(): Promise<void> {
    const { guard } = this.options;
    if (guard === false) {
      new Logger('LockBoard').warn(BOARD_GUARD_OFF(this.path));
      return;
    }
    if (typeof guard !== 'function') {
      this.delegate = guard;
      return;
    }
    const type = guard as Type<CanActivate>;
    try {
      this.delegate = this.moduleRef.get(type, { strict: false });
    } catch {
      try {
        this.delegate = await this.moduleRef.create(type);
      } catch (error) {
        throw new Error(BOARD_GUARD_UNRESOLVED(type.name || 'guard', error));
      }
    }
  }

  canActivate(context: ExecutionContext): ReturnType<CanActivate['canActivate']> {
    if (this.options.guard === false) return true;
    // Never open when the delegate is missing (a start that did not finish).
    return this.delegate ? this.delegate.canActivate(context) : false;
  }
}
