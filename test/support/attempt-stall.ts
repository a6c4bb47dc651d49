import type Redis from 'ioredis';
import { LuaScript } from '../../lib/redis/lua-script';
import { stallEventLoop } from './event-loop';

/** The scripts of an acquisition's attempt that can join or stand in a line (a first small attempt excluded), and Redisson's layout's attempts. */
export const ACQUIRE_SCRIPTS = [
  'reentrant-acquire',
  'rw-read-acquire',
  'rw-write-acquire',
  'semaphore-acquire',
  // Layout 'redisson' (docs/redisson-interop.md).
  'redisson-lock-acquire',
  'redisson-fair-acquire',
  'redisson-fair-try-acquire',
  'redisson-read-acquire',
  'redisson-write-acquire',
  'redisson-pes-acquire',
] as const;

/**
 * Stalls this process's event loop for `ms` right after the `nth` acquiring attempt that `client`
 * writes from now on (counting EVALSHAs of `ACQUIRE_SCRIPTS`, on keys containing `keyPart` when
 * given): the command is on the wire, Redis answers it, and its reply waits in the socket while
 * nothing of this process runs (a GC pause or CPU-bound work between the write and the reply).
 * Fires on every `nth` such attempt, `times` times (default once) (`onStall` is told when it stalled, on `performance.now()`); `disarm()` undoes the hook. `fired` says whether it stalled.
 */
export function stallAfterAttempt(client: Redis, options: { nth: number; ms: number; times?: number; keyPart?: string; onStall?: (from: number, to: number) => void }): { disarm(): void; readonly fired: boolean } {
  const shas = new Set(ACQUIRE_SCRIPTS.map((name) => LuaScript.named(name).sha));
  const original = client.evalsha;
  let seen = 0;
  let fired = 0;
  const disarm = (): void => {
    if (client.evalsha !== original) client.evalsha = original;
  };
  client.evalsha = function (this: Redis, ...args: unknown[]) {
    const result = (original as (...a: unknown[]) => unknown).apply(this, args);
    const [sha, numKeys] = args;
    const keys = args.slice(2, 2 + Number(numKeys)).map(String);
    if (shas.has(String(sha)) && (options.keyPart === undefined || keys.some((k) => k.includes(options.keyPart!))) && ++seen >= options.nth) {
      seen = 0;
      if (++fired >= (options.times ?? 1)) disarm();
      // After the batched write went out (flushed on nextTick), before any reply is handled.
      setImmediate(() => {
        const from = performance.now();
        stallEventLoop(options.ms);
        options.onStall?.(from, performance.now());
      });
    }
    return result;
  } as typeof client.evalsha;
  return {
    disarm,
    get fired() {
      return fired > 0;
    },
  };
}
