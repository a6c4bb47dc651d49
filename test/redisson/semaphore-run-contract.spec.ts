import { SemaphoreService } from '../../lib';
import type { LockRunContext } from '../../lib';
import { RedissonNames } from '../../lib/layouts/redisson-names';
import { describeRunContract, kitEngine, redisEngine, type RunKind } from '../support/lock-contract';

/**
 * `SemaphoreService.run` with one permit in layout 'redisson' (Java's RPermitExpirableSemaphore)
 * passes the run contract every exclusive kind passes, on Redis and on the testing kit (the same
 * scripts in fengari, permit ids as raw bytes). Its permits carry no fencing token.
 */
const tokensOf = (context: LockRunContext): number[] => (context.fencingToken === undefined ? [] : [context.fencingToken]);

const redissonSemaphore: RunKind = {
  kind: 'redisson RPermitExpirableSemaphore',
  run: (app, name, fn, options) => app.get(SemaphoreService).run(name, fn, { permits: 1, ...options }),
  stateKeys: (name) => [name, RedissonNames.semaphoreTimeouts(name)],
  tokens: tokensOf,
  noFencingTokens: true,
  reentrant: false,
  moduleOptions: () => ({ layout: 'redisson' }),
};

describeRunContract(redissonSemaphore, redisEngine);
describeRunContract(redissonSemaphore, kitEngine);
