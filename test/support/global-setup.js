'use strict';
/**
 * Before any suite: the TypeScript the tests' child processes load is transpiled once into the
 * shared cache (scripts/transpile-cache.js), so children started together at the beginning of a parallel
 * run do not each transpile the library.
 */
module.exports = async function globalSetup() {
  require('../../scripts/transpile-cache').prewarm(['lib', 'test/fixtures', 'test/support', 'sample-app/src']);
};
