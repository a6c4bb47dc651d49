'use strict';
// `node -r ./scripts/transpile-register.js file.ts`: .ts files load through transpile-cache.js.
require('./transpile-cache').register();
