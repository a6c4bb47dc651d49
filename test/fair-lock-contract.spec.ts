import { FairLockService, type WaitingRunOptions } from '../lib';
import { describeLockContract } from './support/lock-contract';

describeLockContract({
  kind: 'fair',
  make: (app, name) => app.get(FairLockService).getLock(name),
  run: (app, name, fn, options) => app.get(FairLockService).run(name, fn, options as WaitingRunOptions),
  redisKey: (name) => `lock:{${name}}`,
});
