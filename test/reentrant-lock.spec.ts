import { LockService } from '../lib';
import { describeLockContract } from './support/lock-contract';

describeLockContract({
  kind: 'reentrant',
  make: (app, name) => app.get(LockService).getLock(name),
  run: (app, name, fn, options) => app.get(LockService).run(name, fn, options),
  redisKey: (name) => `lock:{${name}}`,
});
