#!/usr/bin/env node
'use strict';
/**
 * Turns every `lua/*.lua` into one TypeScript module, `lib/redis/lua-sources.generated.ts`, so the
 * scripts travel inside the compiled JavaScript: a bundled app (esbuild, webpack) or one started
 * from another working directory never looks for `lua/` on disk. `lua/` stays the source of truth;
 * the generated file is git-ignored and rewritten (only when its content changes) by `prebuild`,
 * `pretest`, `pretypecheck`, `predemo`, `prebench` and by `jest.config.js`.
 *
 * Blocks shared by several scripts live once in `lua/include/<name>.lua`; a script line
 * `-- #include <name>` is replaced here by the block's body (indented like the line; blocks may
 * include blocks). Every script is thus self-contained on the wire, and its SHA is that of the
 * expanded text. A block starts with a header of comment lines: what it does, then
 * `-- Expects  a, b (note), c` (the locals that must exist where it is included) and
 * `-- Defines  x, y` (the locals it adds; `nothing` when none). The header is the block's contract
 * for the script's author and is not shipped; the body, its own comments included, is.
 *
 * It also writes the lock board's page module (`lib/board/board-assets.generated.ts`, see
 * `scripts/generate-board-assets.js`), so every script that runs this one gets both.
 *
 * Usage: node scripts/generate-lua.js [--check]   (--check: exit 1 when a generated file is out of date)
 */
const { readdirSync, readFileSync, writeFileSync, existsSync } = require('node:fs');
const { join } = require('node:path');
const boardAssets = require('./generate-board-assets');

const root = join(__dirname, '..');
const luaDir = join(root, 'lua');
const includeDir = join(luaDir, 'include');
const target = join(root, 'lib', 'redis', 'lua-sources.generated.ts');

const INCLUDE_LINE = /^([ \t]*)-- #include ([a-z0-9][a-z0-9-]*)[ \t]*$/;
/** Anything that looks like an include: a typo must fail, not ship as a silent comment. */
const INCLUDE_LIKE = /^\s*--\s*#\s*include\b/;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The names of a header's `-- Expects` or `-- Defines` line (parenthesised notes left out). */
function headerNames(header, label, blockName) {
  let at = header.findIndex((text) => text.startsWith(`-- ${label} `));
  if (at < 0) {
    throw new Error(`lua/include/${blockName}.lua: its header has no '-- ${label}  name, ...' line`);
  }
  // A list that ends with a comma goes on on the next header line.
  let text = header[at].slice(`-- ${label} `.length);
  while (text.trimEnd().endsWith(',') && at + 1 < header.length) text += ` ${header[++at].slice(2)}`;
  const list = text.replace(/\([^)]*\)/g, '').trim();
  if (list === 'nothing') return [];
  const names = list.split(',').map((name) => name.trim());
  for (const name of names) {
    if (!IDENTIFIER.test(name)) {
      throw new Error(`lua/include/${blockName}.lua: '-- ${label}' names '${name}', which is not a Lua name`);
    }
  }
  return names;
}

/** A block's header (its leading comment lines) and body (the rest, without blank edges). */
function parseBlock(blockName, text) {
  const lines = text.replace(/\n$/, '').split('\n');
  let end = 0;
  while (end < lines.length && lines[end].startsWith('--') && !INCLUDE_LINE.test(lines[end])) end++;
  const header = lines.slice(0, end);
  const body = lines.slice(end);
  while (body.length > 0 && body[0].trim() === '') body.shift();
  while (body.length > 0 && body[body.length - 1].trim() === '') body.pop();
  if (body.length === 0) throw new Error(`lua/include/${blockName}.lua: the block has no code after its header`);
  return {
    body,
    expects: headerNames(header, 'Expects', blockName),
    defines: headerNames(header, 'Defines', blockName),
  };
}

/** True when `text` declares the local (or function parameter) `name`. */
function declares(text, name) {
  const local = new RegExp(`\\blocal\\s+(?:function\\s+${name}\\b|(?:[A-Za-z_]\\w*\\s*,\\s*)*${name}\\b)`);
  if (local.test(text)) return true;
  const params = /\bfunction\b[^(]*\(([^)]*)\)/g;
  for (let match = params.exec(text); match; match = params.exec(text)) {
    if (match[1].split(',').some((param) => param.trim() === name)) return true;
  }
  return false;
}

/**
 * The text of `source` with every include expanded. `loadBlock(name)` answers a block's text, or
 * undefined when there is no such block; `file` names the script in errors. Fails on a missing or
 * malformed include, a cycle, and a block whose expected locals are not declared above it (a
 * textual check: it does not see Lua scopes, Redis reports the rest at the first run). `chain`,
 * `cache` and `before` (the text above, for a block inside a block) are for its own recursion.
 */
function expand(file, source, loadBlock, chain = [], cache = new Map(), before = '') {
  const lines = source.split('\n');
  const out = [];
  lines.forEach((line, index) => {
    const match = INCLUDE_LINE.exec(line);
    if (!match) {
      if (INCLUDE_LIKE.test(line)) {
        throw new Error(`${file}:${index + 1}: malformed include '${line.trim()}' (write '-- #include <block-name>' on its own line)`);
      }
      out.push(line);
      return;
    }
    const [, indent, blockName] = match;
    const where = `${file}:${index + 1}`;
    if (chain.includes(blockName)) {
      throw new Error(`${where}: include cycle ${[...chain, blockName].join(' -> ')}`);
    }
    let block = cache.get(blockName);
    if (!block) {
      const text = loadBlock(blockName);
      if (text === undefined) {
        throw new Error(`${where} includes '${blockName}', but there is no lua/include/${blockName}.lua`);
      }
      block = parseBlock(blockName, text);
      cache.set(blockName, block);
    }
    const above = `${before}\n${out.join('\n')}`;
    const missing = block.expects.filter((name) => !declares(above, name));
    if (missing.length > 0) {
      throw new Error(`${where} includes '${blockName}', which expects the local(s) ${missing.join(', ')} declared above it`);
    }
    const body = expand(`lua/include/${blockName}.lua`, block.body.join('\n'), loadBlock, [...chain, blockName], cache, above);
    const undeclared = block.defines.filter((name) => !declares(body, name));
    if (undeclared.length > 0) {
      throw new Error(`lua/include/${blockName}.lua says it defines ${undeclared.join(', ')}, but does not declare it`);
    }
    for (const bodyLine of body.split('\n')) out.push(bodyLine === '' ? '' : indent + bodyLine);
  });
  return out.join('\n');
}

/** Reads `lua/include/<name>.lua`, or undefined when it does not exist. */
function readBlock(name) {
  const path = join(includeDir, `${name}.lua`);
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
}

/** The script files: `lua/*.lua` only (blocks in `lua/include/` are not scripts). */
function scriptFiles() {
  return readdirSync(luaDir, { withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.lua'))
    .map((entry) => entry.name)
    .sort();
}

/** The block names of `lua/include/`. */
function blockNames() {
  if (!existsSync(includeDir)) return [];
  return readdirSync(includeDir)
    .filter((file) => file.endsWith('.lua'))
    .map((file) => file.slice(0, -'.lua'.length))
    .sort();
}

/** Every script as shipped (includes expanded), by file name without `.lua`. */
function sources() {
  const result = {};
  for (const file of scriptFiles()) {
    result[file.slice(0, -'.lua'.length)] = expand(`lua/${file}`, readFileSync(join(luaDir, file), 'utf8'), readBlock);
  }
  return result;
}

/** The module's text for the current content of `lua/`. */
function render() {
  const entries = Object.entries(sources()).map(([name, source]) => `  ${JSON.stringify(name)}: ${JSON.stringify(source)},`);
  return [
    '// Generated by scripts/generate-lua.js from lua/*.lua (lua/include/ blocks inlined). Do not edit: edit the .lua files instead.',
    '/* eslint-disable */',
    '',
    '/** The source of every script of `lua/`, by file name without `.lua`, as sent to Redis. */',
    'export const LUA_SOURCES: Readonly<Record<string, string>> = {',
    ...entries,
    '};',
    '',
  ].join('\n');
}

/**
 * Writes the module when it differs from what is on disk, and the board's asset module likewise;
 * returns true when it wrote either.
 */
function generate() {
  const wroteBoard = boardAssets.generate();
  const text = render();
  if (existsSync(target) && readFileSync(target, 'utf8') === text) return wroteBoard;
  writeFileSync(target, text);
  return true;
}

module.exports = { generate, render, sources, expand, blockNames, scriptFiles, luaDir, includeDir, target };

if (require.main === module) {
  try {
    if (process.argv.includes('--check')) {
      const upToDate = existsSync(target) && readFileSync(target, 'utf8') === render();
      if (!upToDate) {
        console.error(`${target} is out of date: run node scripts/generate-lua.js`);
        process.exit(1);
      }
      if (!boardAssets.upToDate()) {
        console.error(`${boardAssets.target} is out of date: run node scripts/generate-lua.js`);
        process.exit(1);
      }
    } else {
      const wroteBoard = boardAssets.generate();
      if (wroteBoard) console.log(`generated ${boardAssets.target}`);
      if (generate() && !wroteBoard) console.log(`generated ${target}`);
    }
  } catch (error) {
    console.error(`generate-lua: ${error.message}`);
    process.exit(1);
  }
}
