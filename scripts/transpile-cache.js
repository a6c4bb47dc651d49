'use strict';
/**
 * `node -r scripts/transpile-register.js file.ts`: what `ts-node/register/transpile-only` does, with
 * a cache on disk, for the child processes the tests start (test/support/child-process.ts) and the
 * docs' runnable samples (docs-check.js). Each child used to transpile the library again (3-4 s of
 * CPU apiece, over a hundred children a test run); here a file is transpiled once (by the first
 * child, or ahead of the run: test/support/global-setup.js) and every later child reads the
 * JavaScript. Same transform as ts-node's transpile-only mode (`ts.transpileModule`: the repository
 * sets `isolatedModules`), with the compiler options of tsconfig.json, or of the file that
 * TRANSPILE_TSCONFIG names; the module keeps its own `.ts` path, so `__dirname` and stack traces
 * name the source.
 *
 * The cache key is the source's content and the compiler options, so a stale entry is never used.
 */
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const Module = require('node:module');

const ROOT = path.join(__dirname, '..');
const TSCONFIG = process.env.TRANSPILE_TSCONFIG || path.join(ROOT, 'tsconfig.json');
const CACHE_DIR = process.env.TRANSPILE_CACHE_DIR || path.join(ROOT, '.cache', 'transpiled');

let compiler; // { ts, options, optionsKey }, loaded on the first miss only (loading TypeScript costs ~0.5 s)
function loadCompiler() {
  if (compiler) return compiler;
  const ts = require('typescript');
  const { config } = ts.readConfigFile(TSCONFIG, ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, path.dirname(TSCONFIG));
  // What the transform needs; declarations and source maps are of no use to a test child.
  Object.assign(options, { declaration: false, sourceMap: false, inlineSourceMap: false, noEmit: false });
  compiler = { ts, options };
  return compiler;
}

// The options that change the emitted code, read without loading TypeScript (a hit needs none).
const OPTIONS_KEY = createHash('sha1')
  .update(fs.readFileSync(TSCONFIG))
  .update(require('typescript/package.json').version)
  .digest('hex')
  .slice(0, 12);

function cachePathOf(source) {
  const digest = createHash('sha1').update(OPTIONS_KEY).update(source).digest('hex');
  return path.join(CACHE_DIR, digest.slice(0, 2), `${digest.slice(2)}.js`);
}

/** The JavaScript of `filename` (a .ts file), from the cache or transpiled and stored. */
function transpiled(filename) {
  const source = fs.readFileSync(filename, 'utf8');
  const cached = cachePathOf(source);
  try {
    return fs.readFileSync(cached, 'utf8');
  } catch {
    const { ts, options } = loadCompiler();
    const { outputText } = ts.transpileModule(source, { compilerOptions: options, fileName: filename });
    fs.mkdirSync(path.dirname(cached), { recursive: true });
    // Written whole under a temporary name, then renamed: children started together never read half a file.
    const partial = `${cached}.${process.pid}.tmp`;
    fs.writeFileSync(partial, outputText);
    fs.renameSync(partial, cached);
    return outputText;
  }
}

/** Every `.ts` this process requires from now on goes through the cache. */
function register() {
  Module._extensions['.ts'] = function loadTypeScript(module, filename) {
    module._compile(transpiled(filename), filename);
  };
}

/** Transpiles ahead every .ts file under `dirs` (relative to the repository) that the cache lacks. */
function prewarm(dirs) {
  let files = 0;
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules') walk(full);
      } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
        transpiled(full);
        files++;
      }
    }
  };
  for (const dir of dirs) walk(path.join(ROOT, dir));
  return files;
}

module.exports = { transpiled, register, prewarm, CACHE_DIR };
