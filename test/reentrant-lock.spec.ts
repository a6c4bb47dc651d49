import { LockService, type WaitingRunOptions } from '../lib';
import { describeLockContract } from './support/lock-contract';

describeLockContract({
  kind: 'reentrant',
  make: (app, name) => app.get(LockService).getLock(name),
  run: (app, name, fn, options) => app.get(LockService).run(name, fn, options as WaitingRunOptions),
  redisKey: (name) => `lock:{${name}}`,
});
