import type { MeasuredOutside } from '../adapters/adapter';
import { BenchJvm } from '../harness/bench-jvm';
import type { BenchSettings } from '../harness/settings';
import type { W1Result } from './w1-uncontended';
import { pairHandoffs, W4ProcessStamps, W4Result } from './w4-handoff';

/**
 * W1 and W4 measured by Java Redisson itself (`interop.RedissonBench` in the interop driver jar):
 * the same keys, sizes and stamps as the Node workloads, run by JVMs the bench starts and relays
 * between. `cpuUsPerOp` is the whole JVM's (Netty and JIT threads included).
 */
export interface JavaRuntime {
  /** The Redisson the jar was built against, and the JVM. */
  readonly redisson: string;
  readonly jvm: string;
  /** The JIT warm-up before the window: uncontended calls and how long they took. */
  readonly warmupOps: number;
  readonly warmupMs: number;
}

export type JavaW1Result = W1Result & JavaRuntime & MeasuredOutside;
export type JavaW4Result = W4Result & JavaRuntime & MeasuredOutside & { readonly warmupHandoffs: number };

const jitOptions = (settings: BenchSettings): Record<string, number> => ({
  'jit-quiet-ms': settings.jvm.jitQuietMs,
  'jit-max-ms': settings.jvm.jitMaxMs,
});

export async function runJavaW1(jar: string, redisUrl: string, settings: BenchSettings, timeoutMs: number): Promise<JavaW1Result> {
  const jvm = new BenchJvm(jar, 'w1', { address: redisUrl, ops: settings.w1.ops, warmup: settings.w1.warmup, ...jitOptions(settings) }, timeoutMs);
  try {
    const setupMs = await jvm.ready;
    return { ...((await jvm.result) as W1Result & JavaRuntime), setupMs };
  } finally {
    jvm.kill();
    await jvm.exited();
  }
}

/**
 * W4 across two JVMs: each `peer <i>` line of one is relayed to the other, as runW4 relays its
 * workers' messages; `go` once both are warmed up. The first `warmupHandoffs` are left out.
 */
export async function runJavaW4(jar: string, redisUrl: string, settings: BenchSettings, timeoutMs: number): Promise<JavaW4Result> {
  const { handoffs, holdMs, holdJitterMs } = settings.w4;
  const warmupHandoffs = settings.jvm.warmupHandoffs;
  const jvms = [0, 1].map(
    (role) =>
      new BenchJvm(
        jar,
        'w4',
        { address: redisUrl, role, handoffs, 'warmup-handoffs': warmupHandoffs, 'hold-ms': holdMs, 'hold-jitter-ms': holdJitterMs, ...jitOptions(settings) },
        timeoutMs,
      ),
  );
  try {
    jvms.forEach((jvm, role) => jvm.onPeer((i) => jvms[1 - role].send(`peer ${i}`)));
    const setupMs = Math.max(...(await Promise.all(jvms.map((jvm) => jvm.ready))));
    for (const jvm of jvms) jvm.send('go');
    const [a, b] = (await Promise.all(jvms.map((jvm) => jvm.result))) as Array<W4ProcessStamps & JavaRuntime>;
    const paired = pairHandoffs(handoffs + warmupHandoffs, a, b, warmupHandoffs);
    return {
      ...paired,
      redisson: a.redisson,
      jvm: a.jvm,
      warmupOps: Math.min(a.warmupOps, b.warmupOps),
      warmupMs: Math.max(a.warmupMs, b.warmupMs),
      warmupHandoffs,
      setupMs,
    };
  } finally {
    for (const jvm of jvms) jvm.kill();
    await Promise.all(jvms.map((jvm) => jvm.exited()));
  }
}
