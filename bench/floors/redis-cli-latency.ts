import { spawnSync } from 'node:child_process';
import { NODE_CORE, pinned } from '../harness/cpu';

/**
 * `redis-cli --latency` for `seconds`: it PINGs every 10 ms, so this is the round trip of a client
 * that is idle between requests. Undefined when redis-cli is missing or printed nothing usable.
 */
export function redisCliLatency(host: string, port: number, seconds: number): { avgMs: number; samples: number } | undefined {
  const [command, args] = pinned(NODE_CORE, 'redis-cli', ['-h', host, '-p', String(port), '--latency']);
  const run = spawnSync('timeout', ['-s', 'INT', String(seconds), command, ...args], { encoding: 'utf8' });
  // Not a terminal: redis-cli prints "min max avg samples" once, when interrupted.
  const fields = (run.stdout ?? '').trim().split(/\s+/).map(Number);
  if (fields.length !== 4 || fields.some((field) => Number.isNaN(field))) return undefined;
  return { avgMs: fields[2], samples: fields[3] };
}
