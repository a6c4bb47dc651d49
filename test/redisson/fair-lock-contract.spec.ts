import { FairLockService, type WaitingRunOptions } from '../../lib';
import { describeLockContract, describeRunContract, kitEngine, type LockKind, type RunKind } from '../support/lock-contract';

/**
 * `FairLockService`'s lock in layout 'redisson' (Java's RFairLock) passes the contract every lock
 * kind passes (docs/redisson-interop.md#fair-lock): the key is the bare name, and no token is kept.
 */
const redissonFairLock: LockKind & RunKind = {
  kind: 'redisson RFairLock',
  make: (app, name) => app.get(FairLockService).getLock(name),
  run: (app, name, fn, options) => app.get(FairLockService).run(name, fn, options as WaitingRunOptions),
  redisKey: (name) => name,
  stateKeys: (name) => [name],
  tokens: (context) => (context.fencingToken === undefined ? [] : [context.fencingToken]),
  noFencingTokens: true,
  reentrant: true,
  moduleOptions: () => ({ layout: 'redisson' }),
  noStoredTokens: true,
};

describeLockContract(redissonFairLock);
describeRunContract(redissonFairLock);
describeLockContract(redissonFairLock, kitEngine);
describeRunContract(redissonFairLock, kitEngine);
