import { Inject, Injectable, InternalServerErrorException, Logger, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { FairLockService } from '../fair-lock.service';
import { LockService } from '../lock.service';
import { ReadWriteLockService } from '../read-write-lock.service';
import { SemaphoreService } from '../semaphores/semaphore.service';
import { RESOLVED_BOARD_OPTIONS } from './lock-board.tokens';
import type { LockInfo } from '../introspection/lock-info';
import {
  BOARD_ACTOR_FAILED,
  BOARD_ACTOR_FAILED_LOG,
  BOARD_AUDIT_REFUSED,
  BOARD_AUDIT_RELEASED,
  BOARD_BAD_RELEASE,
  BOARD_RELEASE_AUDIT,
  BOARD_WHY_CHANGED,
  BOARD_WHY_FREE,
  BOARD_WHY_HOLDER,
  BOARD_WHY_KIND,
  BOARD_WHY_NO_PERMITS,
  BOARD_WHY_READ_HELD,
  BOARD_WHY_TOKEN,
  quoteForLog,
} from './lock-board.messages';
import type { ResolvedLockBoardOptions } from './lock-board.options';
import { lockModuleService } from './lock-module-service';

/** What the page posts to `api/force-release`: the hold as the operator saw it. */
export interface ForceReleaseRequest {
  readonly name: string;
  readonly kind: 'reentrant' | 'fair' | 'read-write' | 'semaphore';
  /** The hold's fencing token as shown: nothing is released unless that hold still has it. */
  readonly fencingToken: number;
  /** The holder shown (a lock's owner id, a semaphore holder's permit id): nothing is released unless it holds it with that token. */
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
 * What became of a force release: released; refused because the lock is not as the board showed it
 * (`why`, after the lock's name: the caller's 409); or refused because it is held for reading (no
 * token names a read hold: the caller's 400).
 */
export type ForceReleaseOutcome = { readonly released: true } | { readonly released: false; readonly why: string; readonly readHeld?: true };

const family = (kind: LockInfo['kind']): string => (kind === 'fair' ? 'reentrant' : kind);

/**
 * Force release from the board (docs/lock-board.md#force-release). It first works out who is asking
 * (before anything reaches Redis: an `actor` that fails refuses the request with 500), then reads
 * the lock as `inspect()` does and goes on only if it is what the operator saw: the same kind
 * (reentrant and fair are one lock: the same hash), held by the holder posted with the token posted
 * (a lock's token, or that semaphore holder's). It then releases through the library's conditional
 * force release on that token, one script that also hands the lock down its line: a token is one
 * hold of one owner, so if the hold changed after the check, nothing is released. One audit line
 * says who (the `actor` option, else the guard's `request.user`) asked, what was checked and
 * whether it was released.
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
    this.locks = lockModuleService(this.moduleRef, LockService);
    this.fairLocks = lockModuleService(this.moduleRef, FairLockService);
    this.readWriteLocks = lockModuleService(this.moduleRef, ReadWriteLockService);
    this.semaphores = lockModuleService(this.moduleRef, SemaphoreService);
  }

  /**
   * Releases the hold `request` names if it is still as shown. Throws a 500 (`actor` failed) before
   * Redis is asked; the library's own errors (a name it cannot use: 400; Redis down: 503) reach the
   * app's exception filters as they are.
   */
  async release(request: ForceReleaseRequest, httpRequest: unknown): Promise<ForceReleaseOutcome> {
    const who = this.who(httpRequest);
    const { name, kind, fencingToken, ownerId } = request;
    let outcome: ForceReleaseOutcome;
    let shownKind: string = kind;
    if (kind === 'semaphore') {
      outcome = await this.releaseSemaphoreHolder(request);
    } else {
      const info = kind === 'read-write' ? await this.readWriteLocks.inspect(name) : await this.locks.inspect(name);
      shownKind = info.kind;
      outcome = await this.releaseLock(request, info);
    }
    const line = BOARD_RELEASE_AUDIT(
      kind,
      name,
      ownerId,
      fencingToken,
      who,
      outcome.released ? BOARD_AUDIT_RELEASED(shownKind, kind) : BOARD_AUDIT_REFUSED(outcome.why),
    );
    if (outcome.released) this.logger.log(line);
    else this.logger.warn(line);
    return outcome;
  }

  private async releaseLock(request: ForceReleaseRequest, info: LockInfo): Promise<ForceReleaseOutcome> {
    const { name, kind, fencingToken, ownerId } = request;
    if (!info.locked) return { released: false, why: BOARD_WHY_FREE };
    if (family(info.kind) !== family(kind)) return { released: false, why: BOARD_WHY_KIND(info.kind, kind) };
    if (info.kind === 'read-write' && info.mode !== 'write') return { released: false, why: BOARD_WHY_READ_HELD, readHeld: true };
    // The hold a token names: the lock's holder (a read-write lock's writer).
    const holder = info.holders.find((entry) => info.kind !== 'read-write' || entry.mode === 'write');
    if (holder?.ownerId !== ownerId) return { released: false, why: BOARD_WHY_HOLDER(holder?.ownerId ?? '', ownerId) };
    if (info.fencingToken !== fencingToken) return { released: false, why: BOARD_WHY_TOKEN(info.fencingToken, fencingToken) };
    // Through the service of the kind the lock is (reentrant and fair share the hash and the script).
    const released =
      info.kind === 'read-write'
        ? await this.readWriteLocks.getReadWriteLock(name).writeLock().forceUnlock({ fencingToken })
        : await (info.kind === 'fair' ? this.fairLocks : this.locks).getLock(name).forceUnlock({ fencingToken });
    return released ? { released: true } : { released: false, why: BOARD_WHY_CHANGED };
  }

  private async releaseSemaphoreHolder(request: ForceReleaseRequest): Promise<ForceReleaseOutcome> {
    const { name, fencingToken, ownerId } = request;
    const info = await this.semaphores.inspect(name);
    if (info.holders.length === 0) return { released: false, why: BOARD_WHY_FREE };
    const holder = info.holders.find((entry) => entry.ownerId === ownerId);
    if (!holder) return { released: false, why: BOARD_WHY_NO_PERMITS(ownerId) };
    if (holder.fencingToken !== fencingToken) return { released: false, why: BOARD_WHY_TOKEN(holder.fencingToken, fencingToken) };
    const released = await this.semaphores.forceRelease(name, { fencingToken, permitId: ownerId });
    return released ? { released: true } : { released: false, why: BOARD_WHY_CHANGED };
  }

  /**
   * Who asked, quoted (a user name cannot forge a log line: see quoteForLog): the `actor` option's
   * answer, else what the guard put on `request.user`, else `anonymous`. An `actor` that throws or
   * gives anything but a string (or undefined: ask `request.user`) is logged and refuses the
   * request with 500: nothing is released without knowing who asked.
   */
  private who(request: unknown): string {
    if (this.options.actor) {
      let fromOption: unknown;
      try {
        fromOption = this.options.actor(request);
      } catch (error) {
        this.logger.error(BOARD_ACTOR_FAILED_LOG(error), error instanceof Error ? error.stack : undefined);
        throw new InternalServerErrorException(BOARD_ACTOR_FAILED);
      }
      if (fromOption !== undefined && typeof fromOption !== 'string') {
        this.logger.error(BOARD_ACTOR_FAILED_LOG(undefined, fromOption));
        throw new InternalServerErrorException(BOARD_ACTOR_FAILED);
      }
      if (fromOption) return quoteForLog(fromOption);
    }
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
