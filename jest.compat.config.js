/**
 * The compatibility subset (`npm run test:compat`): what `.ci/run` runs on every Node line and every
 * server besides the two full passes. One suite per lock kind, the scripts, pub/sub wake-up, a
 * Redis restart and Cluster; about a minute on a quiet 2-core machine. The server comes from
 * REDIS_SERVER_BIN (see test/support/redis-binaries.ts).
 */
const base = require('./jest.config');

const COMPAT_SUITES = [
  'reentrant-scripts', // the scripts, called directly
  'reentrant-lock', // plain lock
  'fair-lock-contract', // fair lock
  'read-write-lock-contract', // read-write lock
  'multi-lock', // multi-lock
  'red-lock', // RedLock on 3 masters, one frozen
  'semaphore', // semaphore
  'waiting', // pub/sub wake-up of waiters
  'faults/redis-restart', // Redis killed and restarted under the app
  'cluster', // Redis Cluster: scripts on the slot's owner, sharded pub/sub
  'server-version', // the version check
];

/**
 * Tests of those suites left to the full passes: about timing, fault handling or configuration
 * rather than what a server or a Node line could change, and slow. Cross-process tests go too: each
 * child process compiles the fixtures with ts-node, most of a cell's time.
 */
const LEFT_TO_FULL_PASSES = [
  'cross-process',
  'RedLock configuration',
  'RedLock on 3 independent masters an acquisition slower than the lease',
  'RedLock on 3 independent masters never grants one name to two owners',
  'RedLock on 3 independent masters the watchdog keeps it past its lease',
  'RedLock on 3 independent masters shutdown cancels',
  'RedLock on 3 independent masters works with one master stopped',
];

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

module.exports = {
  ...base,
  testMatch: COMPAT_SUITES.map((suite) => `<rootDir>/test/${suite}.spec.ts`),
  testNamePattern: `^(?!.*(${LEFT_TO_FULL_PASSES.map(escape).join('|')}))`,
};
