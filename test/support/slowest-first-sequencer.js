'use strict';
/**
 * Jest's order of suites for parallel workers: the slowest first, so no worker is left with a long
 * suite at the end while the others idle. Jest's own sequencer knows durations only from its cache
 * (empty on a fresh clone and in CI, where it falls back to file size); this one falls back to the
 * durations in suite-seconds.json (measured in a parallel run; suites under 5 s are not listed and count
 * as 2 s).
 */
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;
const listedSeconds = require('./suite-seconds.json');

const ROOT = path.join(__dirname, '..', '..');
const UNLISTED_MS = 2_000;

class SlowestFirstSequencer extends Sequencer {
  sort(tests) {
    const expectedMs = (test) => {
      const listed = listedSeconds[path.relative(ROOT, test.path).split(path.sep).join('/')];
      return this.time(test) ?? (listed === undefined ? UNLISTED_MS : listed * 1_000);
    };
    return [...tests].map((test) => [test, expectedMs(test)]).sort((a, b) => b[1] - a[1]).map(([test]) => test);
  }
}

module.exports = SlowestFirstSequencer;
