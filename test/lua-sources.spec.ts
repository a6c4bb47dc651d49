import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LuaScript } from '../lib/redis/lua-script';
import { LUA_SOURCES } from '../lib/redis/lua-sources.generated';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const generator = require('../scripts/generate-lua') as { render(): string; target: string };

/** The scripts reach the runtime through a generated module, never by reading lua/ from disk. */
describe('Lua sources compiled into the library', () => {
  const luaDir = join(__dirname, '..', 'lua');
  const files = readdirSync(luaDir).filter((file) => file.endsWith('.lua'));

  it('the generated module matches lua/*.lua (every file, same text)', () => {
    expect(readFileSync(generator.target, 'utf8')).toBe(generator.render());
    expect(Object.keys(LUA_SOURCES).sort()).toEqual(files.map((file) => file.slice(0, -4)).sort());
    for (const file of files) {
      expect(LUA_SOURCES[file.slice(0, -4)]).toBe(readFileSync(join(luaDir, file), 'utf8'));
    }
  });

  it('LuaScript.named serves every script from the generated sources', () => {
    for (const file of files) {
      const script = LuaScript.named(file.slice(0, -4));
      expect(script.source).toBe(readFileSync(join(luaDir, file), 'utf8'));
      expect(script.sha).toMatch(/^[0-9a-f]{40}$/);
    }
  });

  it('an unknown name fails with a message that says how to regenerate', () => {
    expect(() => LuaScript.named('no-such-script')).toThrow(/generate-lua/);
    expect(() => LuaScript.named('toString')).toThrow(/no Lua script named 'toString'/i);
  });

  it('lua-script.ts does not touch the file system', () => {
    const source = readFileSync(join(__dirname, '..', 'lib', 'redis', 'lua-script.ts'), 'utf8');
    expect(source).not.toMatch(/from 'node:fs'|from 'fs'|require\(['"](node:)?fs['"]\)|__dirname/);
  });
});
