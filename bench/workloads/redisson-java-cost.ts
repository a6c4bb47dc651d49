import { buildRedissonDriver, REDISSON_4 } from '../../test/interop/redisson';
import { BenchJvm } from '../harness/bench-jvm';
import { now, sleep } from '../harness/clock';
import { commandStats, MEASURING, redisCpuMs, sentByMonitor } from '../harness/redis-meters';
import { adminClient } from '../harness/redis-server';
import type { CostParams, CostRaw, ScriptNamer } from './cost';
import { slowLogScripts } from './cost';

/**
 * The cost section's `lock` case measured on Java Redisson 4.x (issue 44: ours should be no dearer
 * in Redis than Redisson's own lock + unlock): `interop.RedissonBench cost` in one JVM, the same
 * windows as a worker's `costChild`, Redis measured from here around each. The JVM answers each
 * window with its wall time and its whole process CPU (Netty and JIT threads included).
 *
 * What Redisson 4.7.0 sends (MONITOR, uncontended): `lock()` one `EVALSHA` (1 key: the lock's
 * hash; exists, hincrby, pexpire inside), `unlock()` one `EVALSHA` (3 keys: the hash, its channel
 * and an unlock latch; get, hexists, hincrby, del, PUBLISH, set px inside) and then a `DEL` of the
 * latch. The watchdog's renewal script (hexists, pexpire) comes on top in a window that meets the
 * renewal timer (every 10 s): for about a second after it fires, renewals go out, mostly for locks
 * already released (bench/README.md has a sample). `sent` cannot be counted in the JVM, so a third window under MONITOR counts what the
 * client sent per command name (a script's inner commands have the source `lua`).
 */

interface JavaWindow {
  readonly ops: number;
  readonly wallMs: number;
  readonly cpuUs: number;
}

/**
 * Redisson's scripts named by their keys and what they run (only their SHAs reach the slow log:
 * Redisson sends `EVALSHA`): unlock is the one given the lock's pub/sub channel; of those given the
 * lock's hash alone, lock starts with `exists` (then hincrby, pexpire), the watchdog's renewal with
 * `hexists` (then pexpire when still held).
 */
export const redissonScriptName: ScriptNamer = (_sha, args, inner) => {
  const keys = args.slice(3, 3 + Number(args[2]));
  if (keys.some((key) => key.startsWith('redisson_lock__channel'))) return 'redisson unlock';
  if (keys.length === 1 && inner[0] === 'exists') return 'redisson lock';
  if (keys.length === 1 && inner[0] === 'hexists') return 'redisson watchdog renewal';
  return undefined;
};

export async function runJavaCost(op: 'lock' | 'trylock', redisUrl: string, params: CostParams, timeoutMs: number): Promise<CostRaw> {
  const jar = buildRedissonDriver(REDISSON_4);
  const admin = adminClient(redisUrl);
  const jvm = new BenchJvm(
    jar,
    'cost',
    { address: redisUrl, op, warmup: params.warmup, 'jit-quiet-ms': params.jitQuietMs, 'jit-max-ms': params.jitMaxMs },
    timeoutMs,
  );
  const window = async (phase: string, size: number): Promise<JavaWindow> => (await jvm.ask(`window ${phase} ${size}`)) as JavaWindow;
  try {
    await jvm.ready;
    // unlock()'s latch DEL follows its reply: let the warm-up's last one land before the reset.
    await sleep(50);
    await admin.config('RESETSTAT');
    const redisCpuBefore = await redisCpuMs(admin);
    const started = now();
    const measured = await window('measured', params.ops);
    const windowEnd = now();
    await sleep(50);
    const server = await commandStats(admin);
    const redisCpuUs = ((await redisCpuMs(admin)) - redisCpuBefore) * 1000;

    const luaWindow = await slowLogScripts(admin, async () => (await window('lua', params.luaOps)).ops, redissonScriptName);
    const monitored = await sentByMonitor(admin, () => window('sent', params.luaOps));
    // Per operation in the MONITOR window, scaled to the measured window's operations.
    const sent = Object.fromEntries([...monitored.sent].map(([name, calls]) => [name, (calls / monitored.result.ops) * measured.ops]));
    jvm.send('end');
    await jvm.result;
    return {
      ops: measured.ops,
      wallMs: measured.wallMs,
      nodeCpuUs: measured.cpuUs,
      redisCpuUs,
      giveUps: 0,
      sent,
      server: Object.fromEntries([...server].filter(([name]) => !MEASURING.test(name))),
      lua: luaWindow.lua,
      luaOps: luaWindow.ops,
      // The bench's clock, not the JVM's: there is no Node profile to cut to it.
      windowUs: [Math.round(started * 1000), Math.round(windowEnd * 1000)],
    };
  } finally {
    jvm.kill();
    await jvm.exited();
    admin.disconnect();
  }
}
