import { LockService } from '../../lib';
import type { RedLock } from '../../lib/locks/red-lock';
import { LockEngine } from '../../lib/engine/lock-engine';
import { runLocked } from '../../lib/locks/run-locked';
import { describeLockContract, type LockKind } from '../support/lock-contract';

/**
 * The RedLock and the multi-lock in layout 'redisson' pass the contract every lock kind passes
 * (docs/redisson-interop.md#redlock): the RedLock over one master (the smallest case) holds
 * Redisson's hash under the bare name and keeps no token; a multi-lock of Redisson-layout plain
 * locks works through its members, each Redisson's hash under its own name.
 */
const redissonRedLock: LockKind = {
  kind: 'redisson RedLock',
  make: (app, name) => app.get(LockService).getRedLock(name),
  run: (app, name, fn, options) =>
    runLocked(app.get(LockEngine), app.get(LockService).getRedLock(name) as RedLock, fn, options) as ReturnType<typeof fn>,
  redisKey: (name) => name,
  moduleOptions: (redisUrl) => ({ layout: 'redisson', redlock: { clients: [redisUrl], masterTimeout: 1_000 } }),
  waitsByRetrying: true,
  noStoredTokens: true,
};

const members = (name: string): [string, string] => [`${name}:a`, `${name}:b`];

const redissonMultiLock: LockKind = {
  kind: 'multi',
  make: (app, name) => {
    const locks = app.get(LockService);
    return locks.getMultiLock(...members(name).map((member) => locks.getLock(member)));
  },
  run: (app, name, fn, options) => app.get(LockService).run(members(name), fn, options) as ReturnType<typeof fn>,
  redisKey: (name) => members(name)[0],
  moduleOptions: () => ({ layout: 'redisson' }),
  reportedName: members,
};

describeLockContract(redissonRedLock);
describeLockContract(redissonMultiLock);
