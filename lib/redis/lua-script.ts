import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { RedisClient } from './redis-client';

/** `lua/` sits at the package root: two levels above `lib/redis`, three above `dist/lib/redis`. */
function luaDirectory(): string {
  for (const candidate of [resolve(__dirname, '../../lua'), resolve(__dirname, '../../../lua')]) {
    if (existsSync(candidate)) return candidate;
  }
  throw new Error(`The library's lua/ folder was not found near ${__dirname}`);
}

const isNoScript = (error: unknown): boolean => error instanceof Error && error.message.startsWith('NOSCRIPT');

export type ScriptArg = string | number;

/** One Lua script of `lua/`, run by SHA; a server that does not know it yet gets the source once. */
export class LuaScript {
  readonly sha: string;

  private constructor(
    readonly name: string,
    readonly source: string,
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  private static readonly cache = new Map<string, LuaScript>();

  /** Loads `lua/<name>.lua` once per process. */
  static named(name: string): LuaScript {
    let script = LuaScript.cache.get(name);
    if (!script) {
      script = new LuaScript(name, readFileSync(join(luaDirectory(), `${name}.lua`), 'utf8'));
      LuaScript.cache.set(name, script);
    }
    return script;
  }

  async run(client: RedisClient, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
    try {
      return await client.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      // EVAL also caches the script, so the next EVALSHA on this server succeeds.
      return client.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

/** A script call prepared once and replayed, e.g. every watchdog round. */
export interface ScriptCall {
  readonly script: LuaScript;
  readonly keys: readonly string[];
  readonly args: readonly ScriptArg[];
}

export { isNoScript };
