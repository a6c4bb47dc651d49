import { spawnSync } from 'node:child_process';
import { buildRedissonDriver } from '../../test/interop/redisson';
import { JAVA_BIN } from '../harness/bench-jvm';
import { FULL } from '../harness/settings';
import type { AdapterSpec } from './adapter';

/**
 * Java Redisson itself, the anchor users know (issue 33): W1 and W4 run by `interop.RedissonBench`,
 * a main class of the interop driver jar (test/interop/redisson-driver/, built by Maven per
 * Redisson version and cached), in JVMs the bench starts. Unavailable without `java` (or without
 * `mvn` when the jar is not built yet).
 */
export function redissonJavaSpec(version: string): AdapterSpec {
  let jar: string | undefined;
  const built = (): string => (jar ??= buildRedissonDriver(version));
  return {
    id: `redisson-java-${version}`,
    label: `Java Redisson ${version}, RLock`,
    settings: `getLock(name).tryLock(5 s) (watchdog, lockWatchdogTimeout 30 s), body, unlock() in finally; Config defaults, single server; one JVM per process (-Xmx256m), JIT warmed up before the window (uncontended calls until no compilation for ${FULL.jvm.jitQuietMs / 1000} s, at most ${FULL.jvm.jitMaxMs / 1000} s); W4 leaves its first ${FULL.jvm.warmupHandoffs} hand-offs out`,
    redissonLayout: true,
    workloads: ['w1', 'w4'],
    external: {
      async run(workload, redisUrl, settings, timeoutMs) {
        const { runJavaW1, runJavaW4 } = await import('../workloads/redisson-java');
        if (workload === 'w1') return runJavaW1(built(), redisUrl, settings, timeoutMs);
        if (workload === 'w4') return runJavaW4(built(), redisUrl, settings, timeoutMs);
        throw new Error(`Java Redisson measures W1 and W4, not ${workload}`);
      },
    },
    unavailable() {
      if (spawnSync(JAVA_BIN, ['-version'], { stdio: 'ignore' }).status !== 0) return `unavailable: no JVM (${JAVA_BIN} -version failed)`;
      try {
        built();
        return undefined;
      } catch (error) {
        const first = (error instanceof Error ? error.message : String(error)).split('\n')[0];
        return `unavailable: the Redisson driver jar did not build (${first})`;
      }
    },
    create: () => Promise.reject(new Error('Java Redisson runs in its own JVMs (external), not in a Node worker')),
  };
}
