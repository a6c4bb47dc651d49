import { LockService } from '../../lib';
import type { LockRunContext } from '../../lib';
import { describeLockContract, describeRunContract, kitEngine, type LockKind, type RunKind } from '../support/lock-contract';

/**
 * `LockService`'s lock in layout 'redisson' (Java's RLock, as RFencedLock so runs carry tokens)
 * passes the contract every lock kind passes (docs/redisson-interop.md): the key is the bare name.
 */
const tokens = (context: LockRunContext): number[] => (context.fencingToken === undefined ? [] : [context.fencingToken]);

const redissonLock: LockKind & RunKind = {
  kind: 'redisson RLock',
  make: (app, name) => app.get(LockService).getLock(name),
  run: (app, name, fn, options) => app.get(LockService).run(name, fn, options),
  redisKey: (name) => name,
  stateKeys: (name) => [name],
  tokens,
  reentrant: true,
  moduleOptions: () => ({ layout: 'redisson', redisson: { fencedLocks: true } }),
  noStoredTokens: true,
};

describeLockContract(redissonLock);
describeRunContract(redissonLock);

// The testing kit runs the same scripts in its in-memory Redis: users' unit tests see the same lock.
describeLockContract(redissonLock, kitEngine);
describeRunContract(redissonLock, kitEngine);
