import { FairLockService, LockService, ReadWriteLockService, SemaphoreService, type LockRunContext } from '../../lib';
import { SemaphoreKeys } from '../../lib/semaphores/semaphore-keys';
import { LockKeys } from '../../lib/redis/lock-keys';
import { runLocked } from '../../lib/locks/run-locked';
import { LockEngine } from '../../lib/engine/lock-engine';
import type { RedLock } from '../../lib/locks/red-lock';
import type { LockKind, RunKind } from './lock-contract';

/** The keys of the default prefix, as the library makes them (any name, braces too). */
const keys = new LockKeys('lock:');

/** Every lock kind the contract suites cover, defined once so each engine runs the same suites. */
const single = (context: LockRunContext): number[] => (context.fencingToken === undefined ? [] : [context.fencingToken]);
const members = (name: string): [string, string] => [`${name}:a`, `${name}:b`];

export const reentrantKind: LockKind & RunKind = {
  kind: 'reentrant',
  make: (app, name) => app.get(LockService).getLock(name),
  run: (app, name, fn, options) => app.get(LockService).run(name, fn, options),
  redisKey: (name) => keys.lock(name),
  stateKeys: (name) => [keys.lock(name)],
  tokens: single,
  reentrant: true,
};

export const fairKind: LockKind & RunKind = {
  kind: 'fair',
  make: (app, name) => app.get(FairLockService).getLock(name),
  run: (app, name, fn, options) => app.get(FairLockService).run(name, fn, options),
  redisKey: (name) => keys.lock(name),
  stateKeys: (name) => [keys.lock(name)],
  tokens: single,
  reentrant: true,
};

export const writeKind: LockKind & RunKind = {
  kind: 'write',
  make: (app, name) => app.get(ReadWriteLockService).getReadWriteLock(name).writeLock(),
  run: (app, name, fn, options) => app.get(ReadWriteLockService).runWrite(name, fn, options),
  redisKey: (name) => keys.readWrite(name),
  stateKeys: (name) => [keys.readWrite(name), LockKeys.readWriteLeases(keys.readWrite(name))],
  tokens: single,
  reentrant: true,
};

const redLock = (app: Parameters<LockKind['make']>[0], name: string): RedLock => app.get(LockService).getRedLock(name) as RedLock;

export const redLockKind: LockKind & RunKind = {
  kind: 'redlock',
  make: (app, name) => app.get(LockService).getRedLock(name),
  run: (app, name, fn, options) => runLocked(app.get(LockEngine), redLock(app, name), fn, options) as Promise<never>,
  redisKey: (name) => keys.lock(name),
  stateKeys: (name) => [keys.lock(name)],
  tokens: single,
  reentrant: true,
  // A generous per-master bound: the contract is about lock semantics, not a loaded CI's event loop.
  moduleOptions: (redisUrl) => ({ redlock: { clients: [redisUrl], masterTimeout: 1_000 } }),
  waitsByRetrying: true,
};

/** A multi-lock over two reentrant locks; the Redis key checked is its first member's. */
export const multiKind: LockKind & RunKind = {
  kind: 'multi',
  make: (app, name) => {
    const locks = app.get(LockService);
    return locks.getMultiLock(...members(name).map((member) => locks.getLock(member)));
  },
  run: (app, name, fn, options) => app.get(LockService).run(members(name), fn, options),
  redisKey: (name) => keys.lock(members(name)[0]),
  stateKeys: (name) => members(name).map((member) => keys.lock(member)),
  tokens: (context) => (context.name as string[]).map((member) => context.fencingTokens?.[member] ?? NaN),
  reentrant: true,
  reportedName: members,
};

/** A semaphore of one permit: exclusive, with fencing tokens, but a permit is not re-entered. */
export const semaphoreKind: RunKind = {
  kind: 'semaphore',
  run: (app, name, fn, options) => app.get(SemaphoreService).run(name, fn, { permits: 1, ...options }),
  stateKeys: (name) => {
    const semaphore = new SemaphoreKeys(keys, name);
    return [semaphore.base, semaphore.leases];
  },
  tokens: single,
  reentrant: false,
};

/** The kinds that pass the lock contract (a `Lock` object). */
export const LOCK_CONTRACT_KINDS: ReadonlyArray<LockKind> = [reentrantKind, fairKind, writeKind, redLockKind, multiKind];
/** The kinds that pass the run contract. */
export const RUN_CONTRACT_KINDS: ReadonlyArray<RunKind> = [reentrantKind, fairKind, writeKind, redLockKind, multiKind, semaphoreKind];
