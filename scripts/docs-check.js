#!/usr/bin/env node
'use strict';
/**
 * `npm run docs:check` (with `npm run docs:api`, the TypeDoc build): the docs cannot rot.
 *
 * 1. Samples. Every ```ts / ```typescript block of README.md and docs/**\/*.md is compiled exactly as
 *    printed, as a module of its own (`tsc --noEmit`), with the tsconfig.json that
 *    docs/getting-started.md gives its readers (its first ```json block with "compilerOptions"), and
 *    `nestjs-redis-locks` and its subpaths mapped to lib/ in place of an installed package. Nothing is
 *    added: a name the block uses must be imported or declared in the block, as a reader pasting it
 *    into a file would need.
 * 2. Runnable samples. A block fenced ```ts run is also executed as it is (transpiled only, as ts-node would: transpile-cache.js;
 *    the same tsconfig) against a throwaway redis-server whose URL is in REDIS_URL; it must exit 0 by
 *    itself within DOCS_RUN_TIMEOUT_MS (30 s): close what it opens. A block fenced ```ts test is a
 *    Jest-style test file (`describe`, `it`, `beforeAll`..., `expect`, the globals Jest gives): it
 *    runs the same way, its tests on Node's own runner with Jest's `expect`, and every test must pass.
 * 3. Links. Every relative link of README.md, CHANGELOG.md, CONTRIBUTING.md and docs/**\/*.md must name an existing
 *    file, and its `#anchor` a heading of the target (GitHub's slugs) or an `<a id>` / `<a name>`.
 *    http(s) and other absolute URLs are not fetched.
 *
 * ```ts no-check opts a block out of 1 and 2 (an illustration that is not TypeScript); see
 * CONTRIBUTING.md for when that is right. Every problem is printed as `<file>:<line>: ...` with the
 * line of the fence (samples) or of the link, and the exit code is 1.
 *
 * 4. API reference. TypeDoc (typedoc.json: lib/index.ts into dist/api, every export and member
 *    documented, warnings are errors); an undocumented one is reported as `lib/<file>:<line>`.
 *
 * Usage: node scripts/docs-check.js [--root <dir>] [--only samples|links|api] [--no-run]
 *   --root: where the markdown is (default: the repository; test/docs-check.spec.ts uses a fixture;
 *   with --root the API part is skipped).
 *   KEEP_DOCS_TMP=1 keeps the extracted samples in .cache/docs-check/<pid>/.
 */
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');

const REPO = path.resolve(__dirname, '..');
const LIB_ENTRIES = {
  'nestjs-redis-locks': 'lib/index.ts',
  'nestjs-redis-locks/testing': 'lib/testing/index.ts',
  'nestjs-redis-locks/terminus': 'lib/terminus/index.ts',
  'nestjs-redis-locks/board': 'lib/board/index.ts',
};
/** The page whose tsconfig.json the samples are compiled with: what the docs tell a reader to use. */
const TSCONFIG_PAGE = 'docs/getting-started.md';
const SAMPLE_LANGS = new Set(['ts', 'typescript']);
const FLAGS = new Set(['no-check', 'run', 'test']);
const RUN_TIMEOUT_MS = Number(process.env.DOCS_RUN_TIMEOUT_MS || 30_000);
const TMP = path.join(REPO, '.cache', 'docs-check', String(process.pid)); // one per run: the spec may run beside npm run docs:check
const MAX_ERRORS_PER_SAMPLE = 5;

// ---------------------------------------------------------------------------------------------
// Markdown files

function markdownFiles(root, withChangelog) {
  const files = ['README.md'];
  if (withChangelog) files.push('CHANGELOG.md', 'CONTRIBUTING.md');
  const walk = (dir) => {
    if (!fs.existsSync(path.join(root, dir))) return;
    for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const rel = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (rel !== 'docs/api') walk(rel);
      } else if (entry.name.endsWith('.md')) files.push(rel);
    }
  };
  walk('docs');
  return files.filter((file) => fs.existsSync(path.join(root, file)));
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)[ \t]*(.*)$/;

/** Splits a markdown text into fenced blocks (with their 1-based fence line) and the lines outside them. */
function parseMarkdown(text) {
  const lines = text.split(/\r?\n/);
  const blocks = [];
  const outside = []; // [lineNo, text] of every line not inside a fenced block
  let open = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (open) {
      const close = /^(\s*)(`{3,}|~{3,})\s*$/.exec(line);
      if (close && close[2][0] === open.marker[0] && close[2].length >= open.marker.length) {
        blocks.push(open);
        open = null;
      } else {
        open.lines.push(line.startsWith(open.indent) ? line.slice(open.indent.length) : line.trimStart());
      }
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence && fence[1].length <= 3 + 8 /* list items indent their fences */) {
      open = { line: i + 1, indent: fence[1], marker: fence[2], lang: fence[3].toLowerCase(), info: fence[4].trim(), lines: [], setup: setupBefore(lines, i) };
      continue;
    }
    outside.push([i + 1, line]);
  }
  if (open) blocks.push(open);
  return { blocks, outside };
}

/** The body of a `<!-- ts-setup ... -->` comment that ends right above line index `i` (blank lines allowed). */
function setupBefore(lines, i) {
  let end = i - 1;
  while (end >= 0 && lines[end].trim() === '') end--;
  if (end < 0 || !lines[end].trim().endsWith('-->')) return null;
  let start = end;
  while (start >= 0 && !lines[start].includes('<!--')) start--;
  if (start < 0) return null;
  const comment = lines.slice(start, end + 1).join('\n');
  const match = /<!--\s*ts-setup\b([\s\S]*?)-->\s*$/.exec(comment);
  if (!match) return null;
  return { line: start + 1, code: match[1].replace(/^[ \t]*\n/, '') };
}

// ---------------------------------------------------------------------------------------------
// Links

/** GitHub's heading slug: the rendered text, lower-cased, punctuation dropped, spaces to hyphens. */
function slug(heading) {
  const text = heading
    .replace(/<[^>]+>/g, '')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/!?\[([^\]]*)\]\[[^\]]*\]/g, '$1')
    .replace(/`/g, '')
    .replace(/(\*\*|__)(.+?)\1/g, '$2')
    .replace(/(^|\W)[*_](\S(?:.*?\S)?)[*_](?=\W|$)/g, '$1$2')
    .replace(/~~(.+?)~~/g, '$1');
  return text.trim().toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '').replace(/ /g, '-');
}

const anchorCache = new Map();
function anchorsOf(file) {
  if (anchorCache.has(file)) return anchorCache.get(file);
  const { outside } = parseMarkdown(fs.readFileSync(file, 'utf8'));
  const anchors = new Set();
  const seen = new Map();
  const add = (heading) => {
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  };
  for (let k = 0; k < outside.length; k++) {
    const [lineNo, line] = outside[k];
    const atx = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (atx) add(atx[1]);
    else if (/^ {0,3}(=+|-+)[ \t]*$/.test(line) && k > 0) {
      const [prevNo, prev] = outside[k - 1];
      if (prevNo === lineNo - 1 && prev.trim() !== '' && !/^ {0,3}([#>|*+-]|\d+[.)])/.test(prev)) add(prev.trim());
    }
    for (const m of line.matchAll(/<a\s[^>]*?\b(?:id|name)\s*=\s*["']([^"']+)["']/gi)) anchors.add(m[1]);
  }
  anchorCache.set(file, anchors);
  return anchors;
}

function linksOfLine(line) {
  const code = line.replace(/(`+)[^`]*?\1/g, (span) => ' '.repeat(span.length)); // not in code spans
  const targets = [];
  for (const m of code.matchAll(/\]\(\s*(<[^>]*>|[^)\s]*)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/g)) targets.push(m[1].replace(/^<|>$/g, ''));
  const ref = /^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/.exec(code);
  if (ref) targets.push(ref[1].replace(/^<|>$/g, ''));
  for (const m of code.matchAll(/<(?:a|img|source)\s[^>]*?\b(?:href|src)\s*=\s*["']([^"']*)["']/gi)) targets.push(m[1]);
  return targets;
}

function checkLinks(root) {
  const problems = [];
  for (const file of markdownFiles(root, true)) {
    const { outside } = parseMarkdown(fs.readFileSync(path.join(root, file), 'utf8'));
    for (const [lineNo, line] of outside) {
      for (const target of linksOfLine(line)) {
        if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue; // http(s), mailto, ...
        const hash = target.indexOf('#');
        const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash)).replace(/\?.*$/, '');
        const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
        const resolved = pathPart === '' ? path.join(root, file) : pathPart.startsWith('/') ? path.join(root, pathPart) : path.join(root, path.dirname(file), pathPart);
        const shown = path.relative(root, resolved) || '.';
        if (!fs.existsSync(resolved)) {
          problems.push(`${file}:${lineNo}: broken link (${target}): ${shown} does not exist`);
          continue;
        }
        if (anchor && /\.md$/i.test(resolved) && fs.statSync(resolved).isFile() && !anchorsOf(resolved).has(anchor)) {
          problems.push(`${file}:${lineNo}: broken link (${target}): no heading or <a id> "#${anchor}" in ${shown}`);
        }
      }
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Samples

function extractSamples(root) {
  const samples = [];
  const problems = [];
  for (const file of markdownFiles(root, false)) {
    for (const block of parseMarkdown(fs.readFileSync(path.join(root, file), 'utf8')).blocks) {
      if (!SAMPLE_LANGS.has(block.lang)) continue;
      const flags = block.info.split(/[\s,]+/).filter(Boolean);
      const unknown = flags.filter((flag) => !FLAGS.has(flag));
      if (unknown.length) problems.push(`${file}:${block.line}: unknown sample flag ${unknown.join(' ')} (known: ${[...FLAGS].join(', ')})`);
      if (block.setup) problems.push(`${file}:${block.setup.line}: a hidden <!-- ts-setup --> is not read any more: a sample compiles as printed, so declare what it leaves out in the block`);
      if (flags.includes('no-check')) continue;
      samples.push({ file, line: block.line, code: block.lines.join('\n'), run: flags.includes('run'), test: flags.includes('test') });
    }
  }
  return { samples, problems };
}

/**
 * The tsconfig.json that docs/getting-started.md gives its readers (its first ```json block with
 * "compilerOptions"): `{ json, options }`, or `{ problem }` when the page has none that parses.
 */
function docsTsconfig(ts, root) {
  const file = path.join(root, TSCONFIG_PAGE);
  if (!fs.existsSync(file)) return { problem: `${TSCONFIG_PAGE}: missing: the samples are compiled with the tsconfig.json it gives` };
  const block = parseMarkdown(fs.readFileSync(file, 'utf8')).blocks.find((b) => b.lang === 'json' && b.lines.join('\n').includes('"compilerOptions"'));
  if (!block) return { problem: `${TSCONFIG_PAGE}: no \`\`\`json block with "compilerOptions": the samples are compiled with the tsconfig.json it gives` };
  const parsed = ts.parseConfigFileTextToJson('tsconfig.json', block.lines.join('\n'));
  if (parsed.error) return { problem: `${TSCONFIG_PAGE}:${block.line}: its tsconfig.json does not parse: ${ts.flattenDiagnosticMessageText(parsed.error.messageText, ' ')}` };
  const converted = ts.convertCompilerOptionsFromJson(parsed.config.compilerOptions ?? {}, root);
  if (converted.errors.length) return { problem: `${TSCONFIG_PAGE}:${block.line}: its tsconfig.json: ${converted.errors.map((e) => ts.flattenDiagnosticMessageText(e.messageText, ' ')).join('; ')}` };
  return { json: parsed.config.compilerOptions, options: converted.options };
}

/**
 * The reader's options, plus only what stands in for their project: the package resolved to lib/
 * (instead of node_modules), the repository's @types, each sample a module of its own (as a file of
 * its own is), and no output.
 */
function compilerOptions(ts, docs) {
  return {
    ...docs.options,
    noEmit: true,
    moduleDetection: ts.ModuleDetectionKind.Force,
    typeRoots: [path.join(REPO, 'node_modules', '@types')],
    paths: Object.fromEntries(Object.entries(LIB_ENTRIES).map(([k, v]) => [k, [path.join(REPO, v)]])),
  };
}

/** Writes each sample, exactly as printed, as `.cache/docs-check/<pid>/sample-<n>.ts`. */
function writeSamples(samples, docs) {
  fs.rmSync(TMP, { recursive: true, force: true });
  fs.mkdirSync(TMP, { recursive: true });
  samples.forEach((sample, n) => {
    sample.path = path.join(TMP, `sample-${String(n + 1).padStart(3, '0')}.ts`);
    fs.writeFileSync(sample.path, `${sample.code}\n`);
  });
  fs.writeFileSync(
    path.join(TMP, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { ...docs.json, noEmit: true, moduleDetection: 'force', paths: Object.fromEntries(Object.entries(LIB_ENTRIES).map(([k, v]) => [k, [path.join(REPO, v)]])) }, files: samples.map((s) => path.basename(s.path)) }, null, 2),
  );
}

/** Where a diagnostic of a sample file is in its markdown file. */
function locate(sample, line0, col0) {
  return `${sample.file}:${sample.line + 1 + line0}:${col0 + 1}`;
}

/** A hint for the errors a sample that relied on the old auto-imports shows. */
function hint(code) {
  return code === 2304 || code === 2552 || code === 2503 || code === 1219 ? ' (import or declare it in the sample: the checker adds nothing)' : '';
}

function compileSamples(ts, samples, docs) {
  const program = ts.createProgram(samples.map((s) => s.path), compilerOptions(ts, docs));
  const byPath = new Map(samples.map((s) => [path.resolve(s.path), s]));
  const problems = [];
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n  ');
    const sample = diagnostic.file && byPath.get(path.resolve(diagnostic.file.fileName));
    if (!sample) {
      const where = diagnostic.file ? `${path.relative(REPO, diagnostic.file.fileName)}:${diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line + 1}` : 'tsc';
      problems.push(`${where}: TS${diagnostic.code}: ${message}`);
      continue;
    }
    sample.failed = (sample.failed ?? 0) + 1;
    if (sample.failed > MAX_ERRORS_PER_SAMPLE) continue;
    const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
    problems.push(`${sample.file}:${sample.line}: sample does not compile: TS${diagnostic.code} at ${locate(sample, line, character)}: ${message}${hint(diagnostic.code)}`);
  }
  for (const sample of samples) {
    if (sample.failed > MAX_ERRORS_PER_SAMPLE) problems.push(`${sample.file}:${sample.line}: ... and ${sample.failed - MAX_ERRORS_PER_SAMPLE} more error(s) in this sample`);
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Runnable samples

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function startRedis() {
  const bin = process.env.REDIS_SERVER_BIN || 'redis-server';
  const port = await freePort();
  const child = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const failed = new Promise((_, reject) => child.once('error', (e) => reject(new Error(`cannot start ${bin} for the runnable samples: ${e.message}`))));
  const Redis = require('ioredis');
  const client = new Redis(`redis://127.0.0.1:${port}`, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  const ready = (async () => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        await client.connect();
        await client.ping();
        return;
      } catch (error) {
        client.disconnect();
        if (Date.now() > deadline) throw new Error(`${bin} on port ${port} did not answer: ${error}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  })();
  await Promise.race([ready, failed]);
  return {
    url: `redis://127.0.0.1:${port}`,
    flush: () => client.flushall(),
    stop: () => {
      client.disconnect();
      child.kill('SIGKILL');
    },
  };
}

/** A Jest-style sample as a program: Jest's globals from `jest-globals.js` (as Jest gives them), its code as it is. */
function testSource(sample) {
  return [`require(${JSON.stringify(path.join(TMP, 'jest-globals.js'))});`, sample.code, ''].join('\n');
}

function writeRunSupport(docs) {
  // Jest's globals for ```ts test samples: Node's own test runner, and Jest's `expect`.
  fs.writeFileSync(
    path.join(TMP, 'jest-globals.js'),
    [
      "const t = require('node:test');",
      "const { expect } = require('expect');",
      'Object.assign(globalThis, { describe: t.describe, it: t.it, test: t.test, beforeAll: t.before, afterAll: t.after, beforeEach: t.beforeEach, afterEach: t.afterEach, expect });',
      '',
    ].join('\n'),
  );
  // `nestjs-redis-locks` and its subpaths resolve to lib/ (transpiled on the fly), ahead of
  // Node's own resolution, which would find this package itself and its dist/.
  const map = Object.fromEntries(Object.entries(LIB_ENTRIES).map(([k, v]) => [k, path.join(REPO, v)]));
  fs.writeFileSync(
    path.join(TMP, 'resolve-lib.js'),
    [
      "const Module = require('node:module');",
      `const map = ${JSON.stringify(map)};`,
      'const resolve = Module._resolveFilename;',
      'Module._resolveFilename = function (request, ...rest) { return resolve.call(this, map[request] ?? request, ...rest); };',
      '',
    ].join('\n'),
  );
  fs.writeFileSync(
    path.join(TMP, 'tsconfig.run.json'),
    JSON.stringify({ compilerOptions: docs.json }),
  );
}

function runOne(file, env) {
  return new Promise((resolve) => {
    // TypeScript as ts-node's transpile-only mode would run it, from a cache the samples share
    // (transpile-cache.js: a sample starts in well under a second instead of transpiling lib/ again).
    const child = spawn(process.execPath, ['-r', path.join(TMP, 'resolve-lib.js'), '-r', path.join(__dirname, 'transpile-register.js'), file], {
      cwd: TMP,
      env: { ...process.env, ...env, TRANSPILE_TSCONFIG: path.join(TMP, 'tsconfig.run.json') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const started = Date.now();
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output, ms: Date.now() - started });
    });
  });
}

async function runSamples(samples, docs) {
  const runnable = samples.filter((s) => s.run || s.test);
  if (runnable.length === 0) return [];
  const problems = [];
  writeRunSupport(docs);
  const redis = await startRedis();
  try {
    for (const sample of runnable) {
      if (sample.failed) {
        problems.push(`${sample.file}:${sample.line}: runnable sample not run: it does not compile (above)`);
        continue;
      }
      await redis.flush();
      const file = sample.path.replace(/\.ts$/, '.run.ts');
      fs.writeFileSync(file, sample.test ? testSource(sample) : `${sample.code}\n`);
      const result = await runOne(file, { REDIS_URL: redis.url });
      const tail = result.output.trim() === '' ? '' : result.output.trim().split('\n').slice(-15).map((l) => `    ${l}`).join('\n');
      if (result.signal === 'SIGKILL') problems.push(`${sample.file}:${sample.line}: runnable sample did not exit within ${RUN_TIMEOUT_MS} ms (does it close everything it opens?)${tail ? `\n${tail}` : ''}`);
      else if (result.code !== 0) problems.push(`${sample.file}:${sample.line}: runnable sample exited with ${result.code ?? result.signal}${tail ? `\n${tail}` : ''}`);
      else console.log(`  ran ${sample.file}:${sample.line} (${result.ms} ms)`);
    }
  } finally {
    redis.stop();
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// API reference

/** Line of `qualified` (`LockTimeoutError.lockName`, `SemaphoreInfo.holders.__type.ttl`) in `file`, or of its owner. */
function declarationLine(file, qualified) {
  const lines = fs.readFileSync(path.join(REPO, file), 'utf8').split('\n');
  const parts = qualified.split('.').filter((part) => part !== '__type');
  const escape = (text) => text.replace(/[$]/g, '\\$');
  let at = lines.findIndex((line) => new RegExp(`^\\s*export\\b.*\\b(class|interface|type|function|const|let|enum|namespace)\\s+${escape(parts[0])}\\b|^\\s*${escape(parts[0])}\\s*[:,]`).test(line));
  if (at < 0) return 1;
  for (const member of parts.slice(1)) {
    const found = lines.findIndex((line, i) => i > at && new RegExp(`(^|[\\s{(,;])(readonly\\s+|get\\s+|async\\s+|static\\s+)*${escape(member)}\\??\\s*[:(=<]`).test(line));
    if (found < 0) break;
    at = found;
  }
  return at + 1;
}

/**
 * Every export of lib/index.ts has a summary of its own: TypeDoc counts a subclass without a comment
 * as documented (it shows the base class's), so an error class would slip through.
 */
function ownSummaries() {
  const ts = require('typescript');
  const entry = path.join(REPO, 'lib/index.ts');
  const program = ts.createProgram([entry], { noEmit: true, skipLibCheck: true, types: [], experimentalDecorators: true });
  const checker = program.getTypeChecker();
  const problems = [];
  for (const exported of checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(entry)))) {
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const declaration = symbol.declarations?.[0];
    if (!declaration || ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim()) continue;
    const file = declaration.getSourceFile();
    // A destructured const (LOCK_MODULE_OPTIONS): its comment sits on the binding element.
    const leading = ts.getLeadingCommentRanges(file.text, declaration.getFullStart()) ?? [];
    if (leading.some((range) => file.text.startsWith('/**', range.pos))) continue;
    const line = file.getLineAndCharacterOfPosition(declaration.getStart()).line + 1;
    problems.push(`${path.relative(REPO, file.fileName)}:${line}: ${exported.name} (exported by lib/index.ts) has no doc comment of its own`);
  }
  return problems;
}

/** TypeDoc with the repository's typedoc.json (treatWarningsAsErrors, notDocumented): each warning as `file:line`. */
function checkApi() {
  const run = spawnSync(process.execPath, [path.join(REPO, 'node_modules', 'typedoc', 'bin', 'typedoc'), '--logLevel', 'Warn'], { cwd: REPO, encoding: 'utf8' });
  const output = `${run.stdout}${run.stderr}`.replace(/\x1b\[[0-9;]*m/g, '').trim();
  const problems = [];
  for (const line of output.split('\n')) {
    const undocumented = /^\[warning\] (\S+) \(([^)]+)\), defined in [^/]+\/(\S+?), does not have any documentation/.exec(line);
    if (undocumented) problems.push(`${undocumented[3]}:${declarationLine(undocumented[3], undocumented[1])}: ${undocumented[1]} (${undocumented[2]}) has no doc comment (TypeDoc, validation.notDocumented)`);
    else if (/^\[(warning|error)\]/.test(line) && !/^\[(warning|error)\] Found \d+ errors? and \d+ warnings?/.test(line)) problems.push(`typedoc: ${line}`);
  }
  problems.push(...ownSummaries());
  if (run.status !== 0 && problems.length === 0) problems.push(`typedoc exited with ${run.status}: ${output.split('\n').slice(-5).join(' / ')}`);
  return problems;
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const args = process.argv.slice(2);
  const arg = (name) => {
    const i = args.indexOf(name);
    return i < 0 ? undefined : args[i + 1];
  };
  const root = path.resolve(arg('--root') ?? REPO);
  const only = arg('--only');
  const problems = [];
  const started = Date.now();

  if (!only || only === 'links') {
    const found = checkLinks(root);
    problems.push(...found);
    console.log(`docs:check links: ${markdownFiles(root, true).length} files, ${found.length} broken`);
  }
  if (!only || only === 'samples') {
    const ts = require('typescript');
    const { samples, problems: flagProblems } = extractSamples(root);
    problems.push(...flagProblems);
    const docs = docsTsconfig(ts, root);
    if (docs.problem) {
      problems.push(docs.problem);
      console.log('docs:check samples: not compiled (no tsconfig.json to compile them with)');
    } else {
      writeSamples(samples, docs);
      const compileProblems = compileSamples(ts, samples, docs);
      problems.push(...compileProblems);
      console.log(`docs:check samples: ${samples.length} compiled with ${TSCONFIG_PAGE}'s tsconfig.json, ${compileProblems.length} errors`);
      if (!args.includes('--no-run')) {
        const runProblems = await runSamples(samples, docs);
        problems.push(...runProblems);
        console.log(`docs:check runnable samples: ${samples.filter((s) => s.run || s.test).length} run, ${runProblems.length} failed`);
      }
    }
    if (!process.env.KEEP_DOCS_TMP) fs.rmSync(TMP, { recursive: true, force: true });
  }

  if (!only || only === 'api') {
    if (root !== REPO && !only) console.log('docs:check api: skipped (--root: the reference is the repository\'s)');
    else {
      const found = checkApi();
      problems.push(...found);
      console.log(`docs:check api (TypeDoc of lib/index.ts into dist/api): ${found.length} problem(s)`);
    }
  }

  for (const problem of problems) console.log(problem);
  console.log(`docs:check: ${problems.length === 0 ? 'ok' : `${problems.length} problem(s)`} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  process.exitCode = problems.length === 0 ? 0 : 1;
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}

module.exports = { slug, parseMarkdown, linksOfLine };
