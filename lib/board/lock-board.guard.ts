import { ForbiddenException, Inject, Injectable, Logger, type CanActivate, type ExecutionContext, type OnModuleInit, type Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { BOARD_PATH, RESOLVED_BOARD_OPTIONS } from './lock-board.tokens';
import { BOARD_GUARD_OFF_LOOPBACK, BOARD_GUARD_UNRESOLVED, BOARD_NOT_LOOPBACK } from './lock-board.messages';
import type { ResolvedLockBoardOptions } from './lock-board.options';

/**
 * Whether a `Host` header names this machine by a loopback name: `localhost`, a name under
 * `.localhost` (browsers resolve those to loopback themselves), `127.0.0.1` or `[::1]`, with any
 * port. A DNS name an attacker rebinds to 127.0.0.1 is none of these.
 */
export function isLoopbackHost(host: string | undefined): boolean {
  const match = /^(\[::1\]|[a-z0-9.-]+)(?::\d{1,5})?$/.exec((host ?? '').trim().toLowerCase());
  if (!match) return false;
  const name = match[1];
  return name === 'localhost' || (name.endsWith('.localhost') && !name.startsWith('.')) || name === '127.0.0.1' || name === '[::1]';
}

/**
 * The board's own guard on its page and API (not on its script and stylesheet, which carry no
 * data): it runs the guard the options name (after the app's global guards, which apply as to any
 * controller). A guard class is resolved when the module starts, from
 * the app's providers or created with the module's injector, so a guard that injects services works
 * and a guard that cannot be built fails the start, not the first request. With `guard: false` it
 * lets in only requests to a loopback name (`isLoopbackHost`): local development, never DNS rebinding.
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
      new Logger('LockBoard').warn(BOARD_GUARD_OFF_LOOPBACK(this.path));
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
    if (this.options.guard === false) {
      // No guard: only a request to a loopback name. A page of another site whose name was rebound
      // to 127.0.0.1 is same-origin to the browser, but its requests carry its own Host.
      const host = context.switchToHttp().getRequest<{ headers?: Record<string, string | string[] | undefined> }>().headers?.host;
      const value = Array.isArray(host) ? host[0] : host;
      if (!isLoopbackHost(value)) throw new ForbiddenException(BOARD_NOT_LOOPBACK(value));
      return true;
    }
    // Never open when the delegate is missing (a start that did not finish).
    return this.delegate ? this.delegate.canActivate(context) : false;
  }
}
