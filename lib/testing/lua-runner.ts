import { createHash } from 'node:crypto';
import { ReplyError } from 'ioredis';
import { StatusReply, type Reply } from './keyspace/replies';
import { loadFengari, type LuaState } from './fengari';

/** Runs one Redis command for a script (the keyspace's `execute`, or the server's publish). */
export type ScriptCommand = (name: string, args: string[]) => Reply;

const NOSCRIPT = 'NOSCRIPT No matching script. Please use EVAL.';

/**
 * The library's own Lua scripts, run as Redis runs them: one interpreter per simulated server,
 * scripts cached by SHA1 (EVALSHA of an unknown one answers NOSCRIPT), `KEYS`/`ARGV` and a
 * `redis` table whose `call`/`pcall` reach the in-memory keyspace. Fengari is Lua 5.3 and Redis
 * embeds 5.1, so the edges are converted as Redis does: numbers are doubles (see the prelude
 * below) and become strings as 5.1 writes them (`3`, not `3.0`; `string.format('%d')` of any
 * number), a number handed to `redis.call` is
 * written as an integer when it is one (5.3 would write `3.0`), a number returned is truncated to
 * an integer, `false` is nil, a table is an array up to its first nil, and `{err=}`/`{ok=}` are
 * error and status replies.
 */
export class LuaRunner {
  private readonly f = loadFengari();
  private readonly L: LuaState;
  private readonly bySha = new Map<string, number>();
  private command: ScriptCommand | undefined;

  constructor() {
    const { lua, lauxlib, lualib, to_luastring } = this.f;
    const L = (this.L = lauxlib.luaL_newstate());
    lualib.luaL_openlibs(L);
    lua.lua_newtable(L);
    lua.lua_pushjsfunction(L, (state) => this.redisCall(state, true));
    lua.lua_setfield(L, -2, to_luastring('call'));
    lua.lua_pushjsfunction(L, (state) => this.redisCall(state, false));
    lua.lua_setfield(L, -2, to_luastring('pcall'));
    lua.lua_pushjsfunction(L, (state) => this.replyTable(state, 'err'));
    lua.lua_setfield(L, -2, to_luastring('error_reply'));
    lua.lua_pushjsfunction(L, (state) => this.replyTable(state, 'ok'));
    lua.lua_setfield(L, -2, to_luastring('status_reply'));
    lua.lua_pushjsfunction(L, () => 0);
    lua.lua_setfield(L, -2, to_luastring('log'));
    lua.lua_setglobal(L, to_luastring('redis'));
    // Lua 5.1 (Redis) has only doubles; fengari's integers are 32-bit and wrap (a time in
    // microseconds does not fit). Every number a script reads (tonumber, replies) is made a float,
    // so its arithmetic is 5.1's: exact up to 2^53.
    // `unpack` is 5.1's name for 5.3's table.unpack.
    // string.format's %d / %i take any number and truncate it, as 5.1's do (5.3's want an integer,
    // and fengari's are 32-bit: a time in ms came out as NaN); a plain `%d` (flags and width, no
    // precision) is written as `%.0f` of the truncated number.
    const prelude =
      'local raw = tonumber\ntonumber = function(v, b) local n = raw(v, b) if n == nil then return nil end return n + 0.0 end\n' +
      'unpack = table.unpack\n' +
      // (`..` is loadFengari's; `tostring` formats through another path of fengari's.)
      'local rawtostring = tostring\n' +
      'tostring = function(v) local s = rawtostring(v) if type(v) == "number" then s = string.gsub(s, "^(-?%d+)%.0$", "%1") end return s end\n' +
      'local format = string.format\n' +
      'string.format = function(fmt, ...)\n' +
      '  local args, n, i = { ... }, select("#", ...), 0\n' +
      '  fmt = string.gsub(fmt, "%%[-+ #0]*%d*%.?%d*[%a%%]", function(spec)\n' +
      '    local conversion = string.sub(spec, -1)\n' +
      '    if conversion == "%" then return nil end\n' +
      '    i = i + 1\n' +
      '    if (conversion == "d" or conversion == "i") and type(args[i]) == "number" and not string.find(spec, ".", 1, true) then\n' +
      '      args[i] = args[i] < 0 and math.ceil(args[i]) or math.floor(args[i])\n' +
      '      return string.sub(spec, 1, -2) .. ".0f"\n' +
      '    end\n' +
      '  end)\n' +
      '  return format(fmt, table.unpack(args, 1, n))\n' +
      'end';
    if (lauxlib.luaL_loadbuffer(L, to_luastring(prelude), null, to_luastring('=prelude')) !== lua.LUA_OK || lua.lua_pcall(L, 0, 0, 0) !== lua.LUA_OK) {
      throw new Error(`Lua prelude failed: ${lua.lua_tojsstring(L, -1)}`);
    }
  }

  static sha1(source: string): string {
    return createHash('sha1').update(source).digest('hex');
  }

  /** EVALSHA: NOSCRIPT when the script was never loaded on this server. */
  evalsha(sha: string, keys: readonly string[], args: readonly string[], command: ScriptCommand): Reply {
    const ref = this.bySha.get(sha.toLowerCase());
    if (ref === undefined) throw new ReplyError(NOSCRIPT);
    return this.run(ref, keys, args, command);
  }

  /** EVAL: compiles (and caches, as Redis does) the script, then runs it. */
  eval(source: string, keys: readonly string[], args: readonly string[], command: ScriptCommand): Reply {
    return this.run(this.compile(source), keys, args, command);
  }

  /** SCRIPT LOAD: compiles and caches the script; answers its SHA. */
  load(source: string): string {
    this.compile(source);
    return LuaRunner.sha1(source);
  }

  /** The registry reference of `source`'s compiled function, compiling it the first time. */
  private compile(source: string): number {
    const sha = LuaRunner.sha1(source);
    let ref = this.bySha.get(sha);
    if (ref === undefined) {
      const { lua, lauxlib, to_luastring } = this.f;
      const status = lauxlib.luaL_loadbuffer(this.L, to_luastring(source), null, to_luastring('@user_script'));
      if (status !== lua.LUA_OK) {
        const message = lua.lua_tojsstring(this.L, -1);
        lua.lua_pop(this.L, 1);
        throw new ReplyError(`ERR Error compiling script (new function): ${message}`);
      }
      ref = lauxlib.luaL_ref(this.L, lua.LUA_REGISTRYINDEX);
      this.bySha.set(sha, ref);
    }
    return ref;
  }

  private run(ref: number, keys: readonly string[], args: readonly string[], command: ScriptCommand): Reply {
    const { lua } = this.f;
    const L = this.L;
    const base = lua.lua_gettop(L);
    this.setArray('KEYS', keys);
    this.setArray('ARGV', args);
    lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, ref);
    this.command = command;
    try {
      if (lua.lua_pcall(L, 0, 1, 0) !== lua.LUA_OK) {
        const message = lua.lua_type(L, -1) === lua.LUA_TTABLE ? this.errorOf(-1) : lua.lua_tojsstring(L, -1);
        throw new ReplyError(message.startsWith('ERR') || /^[A-Z]+ /.test(message) ? message : `ERR user_script: ${message}`);
      }
      const reply = this.toReply(-1);
      if (reply instanceof Error) throw reply;
      return reply;
    } finally {
      this.command = undefined;
      lua.lua_settop(L, base);
    }
  }

  private setArray(name: string, values: readonly string[]): void {
    const { lua, to_luastring } = this.f;
    lua.lua_createtable(this.L, values.length, 0);
    values.forEach((value, i) => {
      lua.lua_pushstring(this.L, to_luastring(value));
      lua.lua_rawseti(this.L, -2, i + 1);
    });
    lua.lua_setglobal(this.L, to_luastring(name));
  }

  /** `redis.call` (raises on an error reply) and `redis.pcall` (returns it as `{err=}`). */
  private redisCall(L: LuaState, raise: boolean): number {
    const { lua } = this.f;
    const count = lua.lua_gettop(L);
    const words: string[] = [];
    for (let i = 1; i <= count; i++) {
      const type = lua.lua_type(L, i);
      if (type === lua.LUA_TSTRING) words.push(lua.lua_tojsstring(L, i));
      else if (type === lua.LUA_TNUMBER) words.push(luaNumberArg(lua.lua_isinteger(L, i) ? lua.lua_tointeger(L, i) : lua.lua_tonumber(L, i)));
      else return this.fail(L, 'ERR Lua redis lib command arguments must be strings or integers', raise);
    }
    if (words.length === 0) return this.fail(L, 'ERR Please specify at least one argument for this redis lib call', raise);
    let reply: Reply;
    try {
      reply = this.command!(words[0], words.slice(1));
    } catch (error) {
      return this.fail(L, error instanceof Error ? error.message : String(error), raise);
    }
    this.push(L, reply);
    return 1;
  }

  private fail(L: LuaState, message: string, raise: boolean): number {
    const { lua, to_luastring } = this.f;
    lua.lua_newtable(L);
    lua.lua_pushstring(L, to_luastring(message));
    lua.lua_setfield(L, -2, to_luastring('err'));
    if (raise) lua.lua_error(L);
    return 1;
  }

  /** `redis.error_reply(msg)` / `redis.status_reply(msg)`: `{err=msg}` / `{ok=msg}`. */
  private replyTable(L: LuaState, field: 'err' | 'ok'): number {
    const { lua, to_luastring } = this.f;
    const text = lua.lua_tojsstring(L, 1);
    lua.lua_newtable(L);
    lua.lua_pushstring(L, to_luastring(text));
    lua.lua_setfield(L, -2, to_luastring(field));
    return 1;
  }

  /** A command's reply as a script sees it (RESP to Lua, as Redis converts it). */
  private push(L: LuaState, reply: Reply): void {
    const { lua, to_luastring } = this.f;
    if (reply === null) lua.lua_pushboolean(L, false);
    else if (typeof reply === 'number') lua.lua_pushnumber(L, reply);
    else if (typeof reply === 'string') lua.lua_pushstring(L, to_luastring(reply));
    else if (reply instanceof StatusReply) {
      lua.lua_newtable(L);
      lua.lua_pushstring(L, to_luastring(reply.text));
      lua.lua_setfield(L, -2, to_luastring('ok'));
    } else {
      lua.lua_createtable(L, reply.length, 0);
      reply.forEach((item, i) => {
        this.push(L, item);
        lua.lua_rawseti(L, -2, i + 1);
      });
    }
  }

  private errorOf(index: number): string {
    const { lua, to_luastring } = this.f;
    lua.lua_getfield(this.L, index, to_luastring('err'));
    const message = lua.lua_type(this.L, -1) === lua.LUA_TSTRING ? lua.lua_tojsstring(this.L, -1) : 'ERR unknown error';
    lua.lua_pop(this.L, 1);
    return message;
  }

  /** The script's return value as Redis answers it (Lua to RESP). */
  private toReply(relativeIndex: number): Reply | Error {
    const { lua, to_luastring } = this.f;
    const L = this.L;
    const index = relativeIndex < 0 ? lua.lua_gettop(L) + relativeIndex + 1 : relativeIndex;
    switch (lua.lua_type(L, index)) {
      case lua.LUA_TNUMBER:
        return Math.trunc(lua.lua_tonumber(L, index));
      case lua.LUA_TSTRING:
        return lua.lua_tojsstring(L, index);
      case lua.LUA_TBOOLEAN:
        return lua.lua_toboolean(L, index) ? 1 : null;
      case lua.LUA_TTABLE: {
        if (lua.lua_getfield(L, index, to_luastring('err')) === lua.LUA_TSTRING) {
          const message = lua.lua_tojsstring(L, -1);
          lua.lua_pop(L, 1);
          return new ReplyError(message);
        }
        lua.lua_pop(L, 1);
        if (lua.lua_getfield(L, index, to_luastring('ok')) === lua.LUA_TSTRING) {
          const text = lua.lua_tojsstring(L, -1);
          lua.lua_pop(L, 1);
          return new StatusReply(text);
        }
        lua.lua_pop(L, 1);
        const items: Reply[] = [];
        for (let i = 1; ; i++) {
          const type = lua.lua_rawgeti(L, index, i);
          if (type === lua.LUA_TNIL) {
            lua.lua_pop(L, 1);
            break;
          }
          const item = this.toReply(-1);
          lua.lua_pop(L, 1);
          // A nested error reply stays an error (ioredis hands it over as such); rare enough here.
          items.push(item instanceof Error ? null : item);
        }
        return items;
      }
      default:
        return null;
    }
  }
}

/**
 * A Lua number handed to `redis.call`, written as Redis (Lua 5.1, doubles) writes it: integers
 * without a decimal point, other numbers in their shortest exact form.
 */
export function luaNumberArg(value: number): string {
  if (Number.isInteger(value)) return value.toFixed(0);
  return String(value);
}
