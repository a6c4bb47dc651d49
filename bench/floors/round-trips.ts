import Redis from 'ioredis';
import { now } from '../harness/clock';
import { median, percentile } from '../harness/stats';
import type { WorkerContext } from '../workloads/context';

/** The cheapest script: one EVALSHA is one round trip plus the smallest Lua call. */
export const TRIVIAL_SCRIPT = `return redis.call('exists', KEYS[1])`;

export interface RoundTripFloor {
  /** Back-to-back PING from Node (a busy client): median and p99. */
  readonly pingP50Ms: number;
  readonly pingP99Ms: number;
  /** Back-to-back EVALSHA of the trivial script: median latency and sequential rate. */
  readonly evalshaP50Ms: number;
  readonly evalshaPerSec: number;
}

async function timed(count: number, call: () => Promise<unknown>): Promise<{ latencies: number[]; elapsed: number }> {
  const latencies = new Array<number>(count);
  const started = now();
  for (let i = 0; i < count; i++) {
    const callStarted = now();
    await call();
    latencies[i] = now() - callStarted;
  }
  return { latencies, elapsed: now() - started };
}

/** Floor child: sequential PING and EVALSHA loops on one connection, after a warm-up. */
export async function roundTripChild(context: WorkerContext): Promise<RoundTripFloor> {
  const { calls } = context.job.params;
  const client = new Redis(context.job.redisUrl);
  const sha = String(await client.script('LOAD', TRIVIAL_SCRIPT));
  await timed(500, () => client.ping());
  const ping = await timed(calls, () => client.ping());
  await timed(500, () => client.evalsha(sha, 1, 'floor:key'));
  const evalsha = await timed(calls, () => client.evalsha(sha, 1, 'floor:key'));
  client.disconnect();
  return {
    pingP50Ms: median(ping.latencies),
    pingP99Ms: percentile(ping.latencies, 99),
    evalshaP50Ms: median(evalsha.latencies),
    evalshaPerSec: (calls * 1000) / evalsha.elapsed,
  };
}
