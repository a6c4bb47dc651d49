/**
 * The interop suites only (test/interop: a real Java Redisson, Maven-built jars, JVMs): `npm run
 * test:interop`, and `.ci/interop` in CI. The default config runs the same files, which skip
 * themselves unless INTEROP=1.
 */
const base = require('./jest.config');

module.exports = {
  ...base,
  roots: ['<rootDir>/test/interop'],
  // JVM starts and 3 x watchdog holds on 2 shared cores: a test's own waits are bounded inside it.
  testTimeout: 60000,
};
