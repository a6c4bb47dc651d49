import { createHash } from 'node:crypto';
import { LUA_SCRIPT_MISSING } from '../lock.messages';
import { LUA_SOURCES } from './lua-sources.generated';
import type { CallTicket } from './bounded-call';
import type { RedisClient } from './redis-client';
import { KnownScripts } from './known-scripts';
import { batchWrites } from './write-batching';

const isNoScript = (error: unknown): boolean => error instanceof Error && error.message.startsWith('NOSCRIPT');

/** A script argument; a Buffer goes to Redis byte for byte (Redisson's permit ids are raw bytes). */
export type ScriptArg = string | number | Buffer;

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

  /**
   * The script of `lua/<name>.lua`, made once per process. The sources are compiled into the
   * library (`lua-sources.generated.ts`, generated from `lua/` by `scripts/generate-lua.js`), so
   * nothing is read from disk: bundled apps and any working directory work.
   */
  static named(name: string): LuaScript {
    let script = LuaScript.cache.get(name);
    if (!script) {
      const source = Object.prototype.hasOwnProperty.call(LUA_SOURCES, name) ? LUA_SOURCES[name] : undefined;
      if (source === undefined) {
        throw new Error(LUA_SCRIPT_MISSING(name));
      }
      script = new LuaScript(name, source);
      LuaScript.cache.set(name, script);
    }
    return script;
  }

  /**
   * Runs the script by SHA. Where the server is not known to have it, `SCRIPT LOAD` is written first
   * on the same connection (pipelined: still one round trip), so calls run in the order they were
   * written. A NOSCRIPT all the same (the server's cache was emptied: SCRIPT FLUSH) loads it again
   * and resends the call, unless the caller stopped waiting (`ticket`). See `known-scripts.ts`.
   */
  run(client: RedisClient, keys: readonly string[], args: readonly ScriptArg[], ticket?: CallTicket): Promise<unknown>;
  /** The same, with the reply read by `read` (in the same step: one promise less than a `.then`). */
  run<T>(client: RedisClient, keys: readonly string[], args: readonly ScriptArg[], ticket: CallTicket | undefined, read: (reply: unknown) => T): Promise<T>;
  run(client: RedisClient, keys: readonly string[], args: readonly ScriptArg[], ticket?: CallTicket, read?: (reply: unknown) => unknown): Promise<unknown> {
    // A plain promise chain rather than an async function: fewer promises per call on the hot path.
    try {
      batchWrites(client);
      const known = KnownScripts.of(client);
      if (!known.has(this.sha, keys) && !known.load(this.sha, this.source, keys)) return this.evaluate(client, keys, args, read);
      return client.evalsha(this.sha, keys.length, ...keys, ...args).then(read, (error: unknown) => {
        if (!isNoScript(error)) throw error;
        known.forgetAll();
        if (ticket?.expired) throw error;
        if (!known.load(this.sha, this.source, keys)) return this.evaluate(client, keys, args, read);
        const resent = client.evalsha(this.sha, keys.length, ...keys, ...args);
        return read ? resent.then(read) : resent;
      });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Makes sure commands written after this on `client` find the script (a pipeline of EVALSHAs,
   * e.g. the watchdog's renewals): loads it where the server is not known to have it.
   */
  ensureLoaded(client: RedisClient, keys: readonly string[]): void {
    const known = KnownScripts.of(client);
    if (!known.has(this.sha, keys)) known.load(this.sha, this.source, keys);
  }

  /**
   * EVAL, for the one case where no connection to load the script on is known yet (a cluster still
   * discovering its slots): not counted as loaded, so a later call loads it for good. The source
   * goes with a trailing newline, so under another SHA: Redis 7.4 keeps a script that was first run
   * by EVAL evictable even after a SCRIPT LOAD of it, and the SHA this library runs must only ever
   * have been loaded.
   */
  private evaluate(client: RedisClient, keys: readonly string[], args: readonly ScriptArg[], read?: (reply: unknown) => unknown): Promise<unknown> {
    const evaluated = client.eval(`${this.source}\n`, keys.length, ...keys, ...args);
    return read ? evaluated.then(read) : evaluated;
  }
}

/** A script call prepared once and replayed, e.g. every watchdog round. */
export interface ScriptCall {
  readonly script: LuaScript;
  readonly keys: readonly string[];
  readonly args: readonly ScriptArg[];
}

export { isNoScript };
