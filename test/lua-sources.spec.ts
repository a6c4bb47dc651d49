import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LuaScript } from '../lib/redis/lua-script';
import { LUA_SOURCES } from '../lib/redis/lua-sources.generated';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const generator = require('../scripts/generate-lua') as {
  render(): string;
  sources(): Record<string, string>;
  expand(file: string, source: string, loadBlock: (name: string) => string | undefined): string;
  blockNames(): string[];
  target: string;
  luaDir: string;
  includeDir: string;
};

const luaDir = join(__dirname, '..', 'lua');
const files = readdirSync(luaDir).filter((file) => file.endsWith('.lua'));
const scriptText = (file: string): string => readFileSync(join(luaDir, file), 'utf8');
const blockText = (name: string): string => readFileSync(join(luaDir, 'include', `${name}.lua`), 'utf8');
const includesOf = (text: string): string[] => [...text.matchAll(/^\s*-- #include ([a-z0-9-]+)\s*$/gm)].map((match) => match[1]);

/** The scripts reach the runtime through a generated module, never by reading lua/ from disk. */
describe('Lua sources compiled into the library', () => {
  it('the generated module holds every lua/*.lua (and no block) as shipped: includes expanded', () => {
    expect(readFileSync(generator.target, 'utf8')).toBe(generator.render());
    expect(Object.keys(LUA_SOURCES).sort()).toEqual(files.map((file) => file.slice(0, -4)).sort());
    expect(LUA_SOURCES).toEqual(generator.sources());
    for (const file of files) {
      const text = scriptText(file);
      // A script without includes ships as written.
      if (includesOf(text).length === 0) expect(LUA_SOURCES[file.slice(0, -4)]).toBe(text);
    }
  });

  it('LuaScript.named serves every script from the generated sources; the SHA is of the expanded text', () => {
    for (const file of files) {
      const script = LuaScript.named(file.slice(0, -4));
      expect(script.source).toBe(LUA_SOURCES[file.slice(0, -4)]);
      expect(script.sha).toBe(createHash('sha1').update(script.source).digest('hex'));
    }
  });

  it('an unknown name fails with a message that says how to regenerate', () => {
    expect(() => LuaScript.named('no-such-script')).toThrow(/generate-lua/);
    expect(() => LuaScript.named('toString')).toThrow(/no Lua script named 'toString'/i);
    for (const block of generator.blockNames()) expect(() => LuaScript.named(block)).toThrow(/no Lua script named/i);
  });

  it('lua-script.ts does not touch the file system', () => {
    const source = readFileSync(join(__dirname, '..', 'lib', 'redis', 'lua-script.ts'), 'utf8');
    expect(source).not.toMatch(/from 'node:fs'|from 'fs'|require\(['"](node:)?fs['"]\)|__dirname/);
  });

  it('`generate-lua.js --check` passes on the current tree', () => {
    expect(() => execFileSync(process.execPath, [join(__dirname, '..', 'scripts', 'generate-lua.js'), '--check'], { stdio: 'pipe' })).not.toThrow();
  });
});

describe('Lua blocks included at build time', () => {
  const blocks = generator.blockNames();

  it('no shipped script keeps an include line', () => {
    for (const [name, source] of Object.entries(LUA_SOURCES)) {
      expect({ name, include: /#\s*include/.test(source) }).toEqual({ name, include: false });
    }
  });

  it('every block is used, by a script or by a block a script uses', () => {
    expect(blocks.length).toBeGreaterThan(0);
    const used = new Set<string>();
    const visit = (names: string[]): void => {
      for (const name of names) {
        if (used.has(name)) continue;
        used.add(name);
        visit(includesOf(blockText(name)));
      }
    };
    visit(files.flatMap((file) => includesOf(scriptText(file))));
    expect([...used].sort()).toEqual(blocks);
  });

  it('every block starts with a header naming what it expects and defines; every script with KEYS/ARGV/Returns', () => {
    for (const name of blocks) {
      const header = blockText(name).split('\n\n')[0];
      expect({ name, header: /^-- \S[\s\S]*\n-- Expects {2}\S[\s\S]*\n-- Defines {2}\S/.test(header) }).toEqual({ name, header: true });
    }
    for (const file of files) {
      const text = scriptText(file);
      const header = text.slice(0, text.search(/^local /m));
      expect({ file, keys: header.includes('-- KEYS[1]'), returns: header.includes('-- Returns') }).toEqual({ file, keys: true, returns: true });
      if (/\bARGV\[/.test(LUA_SOURCES[file.slice(0, -4)])) expect({ file, argv: header.includes('-- ARGV[1]') }).toEqual({ file, argv: true });
    }
  });

  describe('expand', () => {
    const blockOf = (body: string, expects = 'nothing', defines = 'nothing'): string =>
      `-- What it does.\n-- Expects  ${expects}\n-- Defines  ${defines}\n\n${body}\n`;

    it('replaces an include line by the block body, indented like the line, header left out, nested blocks too', () => {
      const load = (name: string): string | undefined =>
        ({
          clock: blockOf("local now = redis.call('time')[1]", 'nothing', 'now (seconds)'),
          twice: blockOf('-- #include clock\nif now then\n  local twice = now * 2\nend', 'key'),
        })[name];
      const source = "-- KEYS[1] a key\nlocal key = KEYS[1]\nif key then\n  -- #include twice\nend\nreturn 1\n";
      expect(generator.expand('lua/s.lua', source, load)).toBe(
        "-- KEYS[1] a key\nlocal key = KEYS[1]\nif key then\n  local now = redis.call('time')[1]\n  if now then\n    local twice = now * 2\n  end\nend\nreturn 1\n",
      );
    });

    it('a missing block fails naming the script, its line and the block', () => {
      expect(() => generator.expand('lua/s.lua', 'local a = 1\n-- #include nowhere\n', () => undefined)).toThrow(
        "lua/s.lua:2 includes 'nowhere', but there is no lua/include/nowhere.lua",
      );
    });

    it('a cycle fails naming the chain', () => {
      const load = (name: string): string | undefined => ({ a: blockOf('-- #include b'), b: blockOf('-- #include a') })[name];
      expect(() => generator.expand('lua/s.lua', '-- #include a\n', load)).toThrow('include cycle a -> b -> a');
      expect(() => generator.expand('lua/s.lua', '-- #include self\n', () => blockOf('-- #include self'))).toThrow('include cycle self -> self');
    });

    it('a malformed include fails rather than ships as a comment', () => {
      expect(() => generator.expand('lua/s.lua', '--#include a\n', () => blockOf('return 1'))).toThrow(/lua\/s\.lua:1: malformed include/);
      expect(() => generator.expand('lua/s.lua', '-- #include a b\n', () => blockOf('return 1'))).toThrow(/malformed include/);
    });

    it('checks the header contract: expected locals declared above, defined locals declared by the block', () => {
      const load = (): string => blockOf('local b = a + 1', 'a', 'b');
      expect(generator.expand('lua/s.lua', 'local a = 1\n-- #include inc\n', load)).toBe('local a = 1\nlocal b = a + 1\n');
      expect(generator.expand('lua/s.lua', 'local function f(a)\n  -- #include inc\nend\n', load)).toContain('  local b = a + 1');
      expect(() => generator.expand('lua/s.lua', 'local c = 1\n-- #include inc\n', load)).toThrow(
        "lua/s.lua:2 includes 'inc', which expects the local(s) a declared above it",
      );
      expect(() => generator.expand('lua/s.lua', 'local a = 1\n-- #include inc\n', () => blockOf('local c = a', 'a', 'b'))).toThrow(
        'lua/include/inc.lua says it defines b, but does not declare it',
      );
      expect(() => generator.expand('lua/s.lua', '-- #include inc\n', () => '-- No contract.\n\nreturn 1\n')).toThrow(
        "lua/include/inc.lua: its header has no '-- Expects  name, ...' line",
      );
    });
  });
});
