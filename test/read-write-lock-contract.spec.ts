import { ReadWriteLockService, type WaitingRunOptions } from '../lib';
import { describeLockContract } from './support/lock-contract';

// The write view is an exclusive lock and passes the whole contract as is.
describeLockContract({
  kind: 'write',
  make: (app, name) => app.get(ReadWriteLockService).getReadWriteLock(name).writeLock(),
  run: (app, name, fn, options) => app.get(ReadWriteLockService).runWrite(name, fn, options as WaitingRunOptions),
  redisKey: (name) => `lock:rw:{${name}}`,
});
