/**
 * The compatibility subset (`npm run test:compat`): what `.ci/run` runs on every Node line and every
 * server besides the two full passes. One suite per lock kind, the scripts, pub/sub wake-up, a
 * Redis restart and Cluster; about a minute on a quiet 2-core machine. Cross-process tests are left
 * to the full passes (each child process compiles the fixtures with ts-node: most of a cell's time).
 * The server comes from REDIS_SERVER_BIN (see test/support/redis-binaries.ts).
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

module.exports = {
  ...base,
  testMatch: COMPAT_SUITES.map((suite) => `<rootDir>/test/${suite}.spec.ts`),
  testNamePattern: '^(?!.*cross-process)',
};
