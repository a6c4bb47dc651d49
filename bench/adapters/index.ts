import type { AdapterSpec } from './adapter';
import { redissonJavaSpec } from './redisson-java';
import { REDISSON_4 } from '../../test/interop/redisson';

/**
 * Every library variant of the bench, in table order. Each `create` requires its library lazily,
 * so a worker process loads only the one it measures.
 */
export const ADAPTERS: readonly AdapterSpec[] = [
  {
    id: 'ours-run',
    label: 'this library, LockService.run',
    settings: 'module defaults (watchdog 30 s, defaultWaitTime 5 s), pub/sub wake-up',
    ours: true,
    reference: true,
    unavailable: () => undefined,
    create: async (url) => (await import('./nest-lock-service')).createLockServiceAdapter(url),
  },
  {
    id: 'ours-run-redisson',
    label: "this library, LockService.run, layout 'redisson'",
    settings: "module defaults as ours-run, layout: 'redisson' (Java Redisson's keys, scripts and '0' wake-ups: docs/redisson-interop.md)",
    ours: true,
    redissonLayout: true,
    // Not W5x: the Redisson layout's plain lock has no hand-off line (a release's '0' wakes one
    // waiter per process, the rest ask again when their 5 s wait runs out), so 20,000 waiters on one
    // key do not drain within its 60 s cap (a quick run, 2026-11-27: 13,849 of 20,000, 173,629 give-ups).
    workloads: ['w1', 'w2', 'w3', 'w4', 'w5'],
    unavailable: () => undefined,
    create: async (url) => (await import('./nest-lock-service')).createLockServiceAdapter(url, 'redisson'),
  },
  {
    id: 'ours-trylock',
    label: 'this library, tryLock + unlock',
    settings: 'getLock(name).tryLock({ waitTime: 5 s }), fn, await unlock() in finally: the pair run wraps, two round trips',
    ours: true,
    unavailable: () => undefined,
    create: async (url) => (await import('./nest-lock-trylock')).createLockTryLockAdapter(url),
  },
  {
    id: 'ours-decorator',
    label: 'this library, @DistributedLock',
    settings: "@DistributedLock('bench:#key') on a provider method, module defaults",
    ours: true,
    unavailable: () =>
      require('./nest-decorator').distributedLockDecorator() ? undefined : 'pending: lib/index.ts does not export DistributedLock yet',
    create: async (url) => (await import('./nest-decorator')).createDecoratorAdapter(url),
  },
  {
    id: 'redlock-default',
    label: '@sesamecare-oss/redlock, defaults',
    settings: 'retryCount 10, retryDelay 200 ms, retryJitter 200 ms (defaults); acquire/release, 30 s lease',
    unavailable: () => undefined,
    create: async (url) => (await import('./sesame-redlock')).createSesameRedlockAdapter(url),
  },
  {
    id: 'redlock-10ms',
    label: '@sesamecare-oss/redlock, 10 ms retry',
    settings: 'retryDelay 10 ms, retryJitter 0, retryCount 500 (about the same 5 s wait budget)',
    unavailable: () => undefined,
    create: async (url) =>
      (await import('./sesame-redlock')).createSesameRedlockAdapter(url, { retryDelay: 10, retryJitter: 0, retryCount: 500 }),
  },
  {
    id: 'semaphore',
    label: 'redis-semaphore Mutex, defaults (10 ms retry)',
    settings:
      'defaults: retryInterval 10 ms, acquireTimeout 10 s, lockTimeout 10 s with refresh. Its default retry IS 10 ms, so the "10 ms retry" variant is this same row',
    unavailable: () => undefined,
    create: async (url) => (await import('./redis-semaphore-mutex')).createRedisSemaphoreAdapter(url),
  },
  {
    id: 'redlock-universal',
    label: 'redlock-universal, defaults',
    settings: 'createLock defaults: retryAttempts 3, retryDelay 100 ms, circuit breaker on; 30 s ttl',
    unavailable: () => undefined,
    create: async (url) => (await import('./redlock-universal')).createRedlockUniversalAdapter(url),
  },
  {
    id: 'node-redisson',
    label: 'node-redisson, defaults',
    settings: 'pub/sub events, 30 s watchdog; tryLock(5000 ms) per acquisition',
    unavailable: () => undefined,
    create: async (url) => (await import('./node-redisson')).createNodeRedissonAdapter(url),
  },
  {
    id: 'set-nx-poller',
    label: 'hand-rolled SET NX PX poller, 10 ms',
    settings: 'SET NX PX + random token, retry every 10 ms, EVALSHA compare-and-delete release',
    unavailable: () => undefined,
    create: async (url) => (await import('./set-nx-poller')).createSetNxPollerAdapter(url),
  },
  // Java Redisson itself, W1 and W4 only: the anchor of the Redisson layout's rows.
  redissonJavaSpec(REDISSON_4),
];

export function adapterSpec(id: string): AdapterSpec {
  const spec = ADAPTERS.find((candidate) => candidate.id === id);
  if (!spec) throw new Error(`Unknown adapter "${id}"; known: ${ADAPTERS.map((a) => a.id).join(', ')}`);
  return spec;
}
