/** Behaviour tests run against real redis-server processes started by test/support. */
// The Lua scripts reach lib/ through a generated module: refresh it from lua/*.lua before any test loads it.
require('./scripts/generate-lua').generate();

module.exports = {
  testEnvironment: 'node',
  // sample-app/: the sample app's own unit tests (with the testing kit).
  roots: ['<rootDir>/test', '<rootDir>/sample-app'],
  testMatch: ['**/*.spec.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  testTimeout: 30000,
  // Suites run in parallel workers (package.json's "test"), each starting its own redis-server
  // processes on free ports; the slowest start first (test/support/slowest-first-sequencer.js).
  testSequencer: '<rootDir>/test/support/slowest-first-sequencer.js',
  globalSetup: '<rootDir>/test/support/global-setup.js',
};
