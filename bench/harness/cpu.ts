import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

/**
 * CPU pinning: redis-server on core 0 and every Node process of the bench on core 1, so Redis never
 * competes with the clients for a core (the machine has 2). Needs `taskset` (util-linux) and at
 * least 2 cores; otherwise nothing is pinned and the results say so.
 */
export const REDIS_CORE = '0';
export const NODE_CORE = '1';

let canPin: boolean | undefined;

export function pinningAvailable(): boolean {
  if (process.env.BENCH_NO_PIN === '1') return false;
  canPin ??= availableParallelism() >= 2 && spawnSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' }).status === 0;
  return canPin;
}

/** The command line that runs `command args` pinned to `core` when pinning is available. */
export function pinned(core: string, command: string, args: readonly string[]): [string, string[]] {
  return pinningAvailable() ? ['taskset', ['-c', core, command, ...args]] : [command, [...args]];
}
