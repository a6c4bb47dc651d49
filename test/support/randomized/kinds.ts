/**
 * The randomized hold model's lock kinds in one layout: the Redis name each kind's lock gets, the
 * witness's resources, `run` through the public services, and the second witness's question "does
 * Redis say this body holds its lock".
 *
 * Layout 'native' keeps the names `<prefix><name>` for every kind (a plain and a fair lock of one name
 * exclude each other there). Layout 'redisson' gives each kind its own names, as Java must
 * (docs/redisson-interop.md#the-two-configurations-side-by-side: one kind per name): plain locks (and
 * a multi-lock's members) `<prefix><name>`, fair `<prefix>fair-<name>`, read-write `<prefix>rw-<name>`,
 * semaphores `<prefix>sem-<name>`.
 */
import type { TestingModule } from '@nestjs/testing';
import {
  FairLockService,
  LockService,
  ReadWriteLockService,
  SemaphoreService,
  type Lock,
  type LockRunContext,
  type RunOptions,
} from '../../../lib';
import type { BaseLock } from '../../../lib/locks/base-lock';
import { LockEngine } from '../../../lib/engine/lock-engine';
import { APP_KEYS } from '../app-keys';
import type { VisitMode } from '../hold-witness';
import { APP_KEY_COUNT, HOSTILE_SHAPES, NAMES, type HostileOp, type Kind, type Name, type Reentry } from './schedule';

export type Layout = 'native' | 'redisson';
export type Body = (context: LockRunContext) => Promise<unknown>;

/** A kind's own part of a name in layout 'redisson' (plain and multi share: a multi-lock's members are plain locks). */
const REDISSON_KIND_PART: Record<Kind, string> = { plain: '', multi: '', fair: 'fair-', read: 'rw-', write: 'rw-', semaphore: 'sem-' };

export class LayoutKinds {
  constructor(
    readonly layout: Layout,
    /** A schedule's own prefix (`r<n>-`): no two schedules share a key. */
    readonly prefix: string,
  ) {}

  /** The lock name a kind's lock of `name` gets (Redisson's key `N` in layout 'redisson'). */
  lockName(kind: Kind, name: string): string {
    return this.layout === 'redisson' ? `${this.prefix}${REDISSON_KIND_PART[kind]}${name}` : this.prefix + name;
  }

  /** The witness's resources of a kind: a multi-lock's members are plain locks; in 'native', plain and fair share one key (they exclude each other). */
  resourcesOf(kind: Kind, name: string): { resources: string[]; mode: VisitMode } {
    switch (kind) {
      case 'plain':
      case 'fair':
        return { resources: [`lock:${this.lockName(kind, name)}`], mode: 'exclusive' };
      case 'multi':
        return { resources: NAMES.map((n) => `lock:${this.lockName('plain', n)}`), mode: 'exclusive' };
      case 'read':
        return { resources: [`rw:${this.lockName(kind, name)}`], mode: 'shared' };
      case 'write':
        return { resources: [`rw:${this.lockName(kind, name)}`], mode: 'exclusive' };
      case 'semaphore':
        return { resources: [`sem:${this.lockName(kind, name)}`], mode: 'exclusive' };
    }
  }

  /** `run` of a kind through its public service. */
  runKind(app: TestingModule, kind: Kind, name: string, body: Body, options: RunOptions): Promise<unknown> {
    const lockName = this.lockName(kind, name);
    switch (kind) {
      case 'plain':
        return app.get(LockService).run(lockName, body, options);
      case 'fair':
        return app.get(FairLockService).run(lockName, body, options);
      case 'read':
        return app.get(ReadWriteLockService).runRead(lockName, body, options);
      case 'write':
        return app.get(ReadWriteLockService).runWrite(lockName, body, options);
      case 'multi':
        return app.get(LockService).run(
          NAMES.map((n) => this.lockName('plain', n)),
          body,
          options,
        );
      case 'semaphore':
        return app.get(SemaphoreService).run(lockName, body, { permits: 1, ...options });
    }
  }

  /**
   * Layout 'redisson' (issue 42): the hostile name a hostile op calls, shaped like a derived key of
   * this schedule's own locks, or one of its application keys (`appKeys`).
   */
  hostileName(target: HostileOp['target']): string {
    if (target.shape === 'app') return this.appKeys()[target.which].key;
    const shapes = this.derivedShapes(target.name);
    return shapes[target.which % shapes.length];
  }

  /** Names shaped like a derived key of lock `name` of each kind, or like this library's records (HOSTILE_SHAPES of them). */
  derivedShapes(name: Name): string[] {
    const plain = this.lockName('plain', name);
    const fair = this.lockName('fair', name);
    const rw = this.lockName('read', name);
    const sem = this.lockName('semaphore', name);
    const shapes = [
      `redisson_lock_token:{${plain}}`,
      `redisson_lock__channel:{${plain}}`,
      `redisson_lock_queue:{${fair}}`,
      `redisson_lock_timeout:{${fair}}`,
      `redisson_rwlock:{${rw}}`,
      `{${rw}}:c0ffee00-0000-4000-8000-000000000000:1:rwlock_timeout:1`,
      `redisson_sc:{${sem}}`,
      `{${sem}}:timeout`,
      `nestjs_redis_locks_permits:{${sem}}`,
      `redisson_unlock_latch:{${plain}}:00000000000000000000000000000000`,
      'lock.instances',
      `lock:{${plain}}`,
    ];
    if (shapes.length !== HOSTILE_SHAPES) throw new Error(`HOSTILE_SHAPES is ${HOSTILE_SHAPES}, the shapes ${shapes.length}`);
    return shapes;
  }

  /** The schedule's application keys: one of each type (APP_KEY_COUNT), written before it runs and checked unchanged after. */
  appKeys(): Array<{ key: string; write: (typeof APP_KEYS)[number]['write'] }> {
    if (APP_KEYS.length !== APP_KEY_COUNT) throw new Error(`APP_KEY_COUNT is ${APP_KEY_COUNT}, the keys ${APP_KEYS.length}`);
    return APP_KEYS.map((appKey) => ({ key: `${this.prefix}app-${appKey.label.replace(/ /g, '-')}`, write: appKey.write }));
  }

  /** `run` of a kind on any name (a hostile one); a multi-lock's other member is a name nothing else uses. */
  runNamed(app: TestingModule, kind: Kind, name: string, body: Body, options: RunOptions): Promise<unknown> {
    switch (kind) {
      case 'plain':
        return app.get(LockService).run(name, body, options);
      case 'fair':
        return app.get(FairLockService).run(name, body, options);
      case 'read':
        return app.get(ReadWriteLockService).runRead(name, body, options);
      case 'write':
        return app.get(ReadWriteLockService).runWrite(name, body, options);
      case 'multi':
        return app.get(LockService).run([`${this.prefix}multi-free`, name], body, options);
      case 'semaphore':
        return app.get(SemaphoreService).run(name, body, { permits: 1, ...options });
    }
  }

  /** A plain or fair lock object, as `getLock` hands it out. */
  lockOf(app: TestingModule, kind: 'plain' | 'fair', name: string): Lock {
    const lockName = this.lockName(kind, name);
    return kind === 'fair' ? app.get(FairLockService).getLock(lockName) : app.get(LockService).getLock(lockName);
  }

  /**
   * The second witness, asked from inside a body (so the lock objects bind to the body's owner):
   * whether Redis says the body holds its lock; undefined for the kinds this check leaves out, or
   * when the question could not be asked. Layout 'native' asks the lock (plain, fair, write).
   * Layout 'redisson' reads Redisson's hash `N` itself (docs/redisson-interop.md#keys): field
   * `<owner>` (plain, fair), `<owner>:write` (write), and for a read `<owner>` with its first read
   * hold's timeout key `{N}:<owner>:rwlock_timeout:1` alive (keys 1..count live while it holds).
   */
  async heldInRedis(app: TestingModule, kind: Kind, name: string): Promise<boolean | undefined> {
    if (this.layout === 'native') {
      const lock = this.exclusiveLockOf(app, kind, name);
      return lock && lock.isHeldByCurrentOwner().catch(() => undefined);
    }
    const key = this.lockName(kind, name);
    const client = app.get(LockEngine).client;
    if (kind === 'plain' || kind === 'fair' || kind === 'write') {
      // A writer's lock object's owner is already `<owner>:write`.
      const field = ownerOf(this.exclusiveLockOf(app, kind, name)!);
      return client.hexists(key, field).then(
        (found) => found === 1,
        () => undefined,
      );
    }
    if (kind === 'read') {
      const owner = ownerOf(app.get(ReadWriteLockService).getReadWriteLock(key).readLock());
      const replies = await client
        .multi()
        .hexists(key, owner)
        .exists(`{${key}}:${owner}:rwlock_timeout:1`)
        .exec()
        .catch(() => null);
      if (!replies || replies.some(([error]) => error)) return undefined;
      return replies.every(([, found]) => found === 1);
    }
    return undefined;
  }

  /**
   * The lock object of a plain, fair or write body's own lock, asked from inside the body (so it binds
   * to the body's owner); undefined for the kinds this check leaves out.
   */
  private exclusiveLockOf(app: TestingModule, kind: Kind, name: string): Lock | undefined {
    if (kind === 'plain' || kind === 'fair') return this.lockOf(app, kind, name);
    if (kind === 'write') return app.get(ReadWriteLockService).getReadWriteLock(this.lockName(kind, name)).writeLock();
    return undefined;
  }
}

/** The owner id a lock object acts for (internal: the public `Lock` does not show it). */
function ownerOf(lock: Lock): string {
  return (lock as unknown as BaseLock).ownerId;
}

/** What aborts when a held lock object's hold is lost (internal: `lock()` has no signal of its own). */
export function holdSignal(lock: Lock): AbortSignal {
  return (lock as unknown as { hold?: { signal: AbortSignal } }).hold?.signal ?? new AbortController().signal;
}

/** What a re-entry inside a body of `kind` takes: the same lock, a member of the multi-lock, a read inside a write. */
export function reentryKind(kind: Kind, reentry: Reentry): Kind | undefined {
  if (kind === 'semaphore') return undefined; // permits are not re-entered
  if (kind === 'multi') return 'plain';
  if (kind === 'write' && reentry.asRead) return 'read';
  return kind;
}
