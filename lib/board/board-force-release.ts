import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { FairLockService } from '../fair-lock.service';
import { LockService } from '../lock.service';
import { ReadWriteLockService } from '../read-write-lock.service';
import { SemaphoreService } from '../semaphores/semaphore.service';
import { RESOLVED_BOARD_OPTIONS } from './lock-board.tokens';
import { BOARD_BAD_RELEASE, BOARD_NEEDS_LOCK_MODULE, BOARD_RELEASE_AUDIT, quoteForLog } from './lock-board.messages';
import type { ResolvedLockBoardOptions } from './lock-board.options';

/** What the page posts to `api/force-release`: the hold as the operator saw it. */
export interface ForceReleaseRequest {
  readonly name: string;
  readonly kind: 'reentrant' | 'fair' | 'read-write' | 'semaphore';
  /** The hold's fencing token as shown: nothing is released unless that hold still has it. */
  readonly fencingToken: number;
  /** The holder shown (a semaphore holder's permit id; for a lock, for the audit line). */
  readonly ownerId: string;
}

const KINDS = ['reentrant', 'fair', 'read-write', 'semaphore'];

/** Checks a posted body field by field; a mistake names the field (the caller's 400). */
export function parseForceRelease(body: unknown): ForceReleaseRequest {
  const value = (body ?? {}) as Record<string, unknown>;
  if (typeof value.name !== 'string' || value.name === '') throw new TypeError(BOARD_BAD_RELEASE('name', 'the lock name shown', value.name));
  if (typeof value.kind !== 'string' || !KINDS.includes(value.kind)) throw new TypeError(BOARD_BAD_RELEASE('kind', KINDS.join(', '), value.kind));
  if (typeof value.fencingToken !== 'number' || !Number.isSafeInteger(value.fencingToken) || value.fencingToken < 1) {
    throw new TypeError(BOARD_BAD_RELEASE('fencingToken', 'the positive integer token shown', value.fencingToken));
  }
  if (typeof value.ownerId !== 'string' || value.ownerId === '') throw new TypeError(BOARD_BAD_RELEASE('ownerId', 'the holder id shown', value.ownerId));
  return { name: value.name, kind: value.kind as ForceReleaseRequest['kind'], fencingToken: value.fencingToken, ownerId: value.ownerId };
}

/**
 * Force release from the board (docs/lock-board.md#force-release): through the library's own
 * conditional force release, so it releases only the hold that still has the fencing token the
 * operator saw (one script, which also hands the lock down its line), and one audit line says who
 * (from the guard's `request.user`, or the `actor` option) released what, or was refused.
 */
@Injectable()
export class BoardForceRelease implements OnModuleInit {
  private readonly logger = new Logger('LockBoard');
  private locks!: LockService;
  private fairLocks!: FairLockService;
  private readWriteLocks!: ReadWriteLockService;
  private semaphores!: SemaphoreService;

  constructor(
    @Inject(RESOLVED_BOARD_OPTIONS) private readonly options: ResolvedLockBoardOptions,
    private readonly moduleRef: ModuleRef,
  ) {}

  onModuleInit(): void {
    try {
      this.locks = this.moduleRef.get(LockService, { strict: false });
      this.fairLocks = this.moduleRef.get(FairLockService, { strict: false });
      this.readWriteLocks = this.moduleRef.get(ReadWriteLockService, { strict: false });
      this.semaphores = this.moduleRef.get(SemaphoreService, { strict: false });
    } catch {
      throw new Error(BOARD_NEEDS_LOCK_MODULE);
    }
  }

  /** True when released; false (nothing changed) when that hold no longer has that token. */
  async release(request: ForceReleaseRequest, httpRequest: unknown): Promise<boolean> {
    const { name, kind, fencingToken, ownerId } = request;
    const released =
      kind === 'semaphore'
        ? await this.semaphores.forceRelease(name, { fencingToken, permitId: ownerId })
        : kind === 'read-write'
          ? await this.readWriteLocks.getReadWriteLock(name).writeLock().forceUnlock({ fencingToken })
          : await (kind === 'fair' ? this.fairLocks : this.locks).getLock(name).forceUnlock({ fencingToken });
    const line = BOARD_RELEASE_AUDIT(kind, name, ownerId, fencingToken, this.who(httpRequest), released);
    if (released) this.logger.log(line);
    else this.logger.warn(line);
    return released;
  }

  /** Who asked, quoted (a user name cannot forge a log line: see quoteForLog). */
  private who(request: unknown): string {
    const fromOption = this.options.actor?.(request);
    if (typeof fromOption === 'string' && fromOption !== '') return quoteForLog(fromOption);
    const user = (request as { user?: unknown } | undefined)?.user;
    if (typeof user === 'string' && user !== '') return quoteForLog(user);
    if (user && typeof user === 'object') {
      const fields = user as Record<string, unknown>;
      for (const key of ['id', 'sub', 'username', 'name', 'email']) {
        const value = fields[key];
        if ((typeof value === 'string' && value !== '') || typeof value === 'number') return quoteForLog(String(value));
      }
    }
    return 'anonymous';
  }
}
