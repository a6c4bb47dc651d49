'use strict';
// `node -r ./test/support/transpile-register.js file.ts`: .ts files load through transpile-cache.js.
require('./transpile-cache').register();
