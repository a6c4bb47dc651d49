import { TESTING_KIT_NEEDS_FENGARI } from './testing-kit.messages';

/** The few parts of `fengari` (Lua 5.3 in JavaScript) used here; the package ships no types. */
export interface LuaState {
  readonly __luaState?: never;
}
export interface Fengari {
  lua: {
    LUA_REGISTRYINDEX: number;
    LUA_OK: number;
    LUA_TNIL: number;
    LUA_TBOOLEAN: number;
    LUA_TNUMBER: number;
    LUA_TSTRING: number;
    LUA_TTABLE: number;
    lua_gettop(L: LuaState): number;
    lua_settop(L: LuaState, index: number): void;
    lua_type(L: LuaState, index: number): number;
    lua_isinteger(L: LuaState, index: number): boolean;
    lua_tointeger(L: LuaState, index: number): number;
    lua_tonumber(L: LuaState, index: number): number;
    lua_toboolean(L: LuaState, index: number): boolean;
    lua_tojsstring(L: LuaState, index: number): string;
    lua_pushinteger(L: LuaState, value: number): void;
    lua_pushnumber(L: LuaState, value: number): void;
    lua_pushstring(L: LuaState, value: Uint8Array): void;
    lua_pushboolean(L: LuaState, value: boolean): void;
    lua_pushjsfunction(L: LuaState, fn: (L: LuaState) => number): void;
    lua_newtable(L: LuaState): void;
    lua_createtable(L: LuaState, narr: number, nrec: number): void;
    lua_setfield(L: LuaState, index: number, name: Uint8Array): void;
    lua_getfield(L: LuaState, index: number, name: Uint8Array): number;
    lua_rawseti(L: LuaState, index: number, i: number): void;
    lua_rawgeti(L: LuaState, index: number, i: number): number;
    lua_setglobal(L: LuaState, name: Uint8Array): void;
    lua_pcall(L: LuaState, nargs: number, nresults: number, msgh: number): number;
    lua_pop(L: LuaState, n: number): void;
    lua_error(L: LuaState): never;
  };
  lauxlib: {
    luaL_newstate(): LuaState;
    luaL_loadbuffer(L: LuaState, source: Uint8Array, size: null, name: Uint8Array): number;
    luaL_ref(L: LuaState, index: number): number;
  };
  lualib: { luaL_openlibs(L: LuaState): void };
  to_luastring(text: string): Uint8Array;
  luaconf: { LUA_COMPAT_FLOATSTRING: boolean };
}

let fengari: Fengari | undefined;

/**
 * Loaded on first use: only the testing subpath needs a Lua interpreter, and `fengari` is an optional
 * peer dependency (production installs do not carry it), so a missing one is named.
 *
 * Loaded with fengari's `LUA_COMPAT_FLOATSTRING` (its `FENGARICONF`, read once when it loads): a
 * number becomes a string as in Redis's Lua 5.1 (`tostring`, `..`), `3`, not 5.3's `3.0`. Every
 * number a script reads is a float here (see the prelude), so without it `'w:' .. permits` would
 * differ from Redis. When fengari was loaded before without it, its number-to-string is wrapped to
 * the same effect.
 */
export function loadFengari(): Fengari {
  if (fengari) return fengari;
  const conf = process.env.FENGARICONF;
  try {
    process.env.FENGARICONF = JSON.stringify({ ...(conf ? (JSON.parse(conf) as object) : {}), LUA_COMPAT_FLOATSTRING: true });
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    fengari = require('fengari') as Fengari;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') throw new Error(TESTING_KIT_NEEDS_FENGARI, { cause: error });
    throw error;
  } finally {
    if (conf === undefined) delete process.env.FENGARICONF;
    else process.env.FENGARICONF = conf;
  }
  if (!fengari.luaconf.LUA_COMPAT_FLOATSTRING) formatFloatsAsLua51();
  return fengari;
}

/** A value on fengari's stack, as its number-to-string sees it. */
interface LuaValue {
  ttisstring(): boolean;
  svalue(): Uint8Array;
  setsvalue(value: unknown): void;
}

/** fengari's number-to-string (behind `tostring` and `..`) without 5.3's `.0` on integral floats. */
function formatFloatsAsLua51(): void {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const lobject = require('fengari/src/lobject.js') as { luaO_tostring: (L: unknown, obj: LuaValue) => void };
  const { luaS_bless } = require('fengari/src/lstring.js') as { luaS_bless: (L: unknown, text: Uint8Array) => unknown };
  /* eslint-enable @typescript-eslint/no-require-imports */
  const { to_luastring } = fengari!;
  const tostring = lobject.luaO_tostring;
  lobject.luaO_tostring = (L, obj) => {
    tostring(L, obj);
    if (!obj.ttisstring()) return;
    const text = new TextDecoder().decode(obj.svalue());
    if (/^-?\d+\.0$/.test(text)) obj.setsvalue(luaS_bless(L, to_luastring(text.slice(0, -2))));
  };
}
