/**
 * W6: a semaphore across processes, this library's `SemaphoreService` against redis-semaphore's
 * `Semaphore` (its defaults, which poll every 10 ms, and a 1 ms retry). `processes` x `tasks` tasks
 * on one semaphore of `permits`, each holding its permit `holdMs` then asking again, for
 * `durationMs`. Every acquisition and release is stamped on the machine's monotonic clock, so the
 * parent merges all processes' records: hand-offs/s (acquisitions in the window: every one follows a
 * release, the semaphore is always contended), hand-off latency (the k-th release matched with the
 * (k + permits)-th acquisition, the queue's own order), fairness (min/max acquisitions per task) and
 * the most holders seen at once (a safety check: never above `permits`).
 */
import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { now } from '../harness/clock';
import { startBenchRedis } from '../harness/redis-server';
import { fmt, median, percentile } from '../harness/stats';

/** The heading of the W6 section of RESULTS.md (replaced when W6 runs, kept when the rest does). */
export const W6_HEADING = '## W6: semaphore across processes';

export const W6_VARIANTS = ['ours', 'redis-semaphore', 'redis-semaphore-1ms'] as const;
export type W6Variant = (typeof W6_VARIANTS)[number];

export interface W6Params {
  readonly processes: number;
  readonly tasks: number;
  readonly permits: number;
  readonly holdMs: number;
  readonly durationMs: number;
}

/**
 * Two shapes: `dense` (16 tasks on 3 permits: waiters always ready, a poller often has a retry
 * landing right after each release) and `sparse` (one task per process on 2 permits, 5 ms holds:
 * each hand-off waits on the library's wake-up path).
 */
export const W6_CONFIGS: ReadonlyArray<{ label: string; params: W6Params }> = [
  { label: 'dense', params: { processes: 4, tasks: 4, permits: 3, holdMs: 2, durationMs: 3000 } },
  { label: 'sparse', params: { processes: 4, tasks: 1, permits: 2, holdMs: 5, durationMs: 3000 } },
];

/** One process's records: per acquisition the task, acquired-at and released-at (ms, monotonic). */
export interface W6Records {
  readonly task: number[];
  readonly acquiredAt: number[];
  readonly releasedAt: number[];
  readonly giveUps: number;
}

export interface W6Result {
  readonly variant: W6Variant;
  readonly handoffsPerSec: number;
  readonly latencyP50Ms: number;
  readonly latencyP99Ms: number;
  readonly fairness: number;
  readonly maxInside: number;
  readonly giveUps: number;
}

/** Child side: `run(fn)` takes one permit around `fn` with the variant's library. */
export async function w6Child(redisUrl: string, variant: W6Variant, params: W6Params): Promise<void> {
  const run = await runnerFor(redisUrl, variant, params.permits);
  const records = { task: [] as number[], acquiredAt: [] as number[], releasedAt: [] as number[] };
  let giveUps = 0;
  const lines = createInterface({ input: process.stdin });
  process.stdout.write('ready\n');
  const go = await new Promise<string>((resolve) => lines.once('line', resolve));
  const [, startAt, stopAt] = go.split(' ').map(Number);
  await new Promise((r) => setTimeout(r, Math.max(0, startAt - now())));
  const task = async (index: number): Promise<void> => {
    while (now() < stopAt) {
      try {
        await run.run(async () => {
          records.acquiredAt.push(now());
          records.task.push(index);
          await new Promise((r) => setTimeout(r, params.holdMs));
          records.releasedAt.push(now());
        });
      } catch (error) {
        if (!run.gaveUp(error)) throw error;
        giveUps += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: params.tasks }, (_, i) => task(i)));
  // The release stamp is taken just before the library's release: close to when others may take it.
  process.stdout.write(`result ${JSON.stringify({ ...records, giveUps })}\n`);
  lines.close();
  await run.close();
}

interface Runner {
  run(fn: () => Promise<void>): Promise<void>;
  gaveUp(error: unknown): boolean;
  close(): Promise<void>;
}

async function runnerFor(redisUrl: string, variant: W6Variant, permits: number): Promise<Runner> {
  const key = 'w6:semaphore';
  if (variant === 'ours') {
    await import('reflect-metadata');
    const { Module } = await import('@nestjs/common');
    const { NestFactory } = await import('@nestjs/core');
    const { LockModule, LockTimeoutError, SemaphoreService } = await import('../../lib');
    @Module({ imports: [LockModule.forRoot({ redis: redisUrl, defaultWaitTime: 60_000 })] })
    class W6Module {}
    const app = await NestFactory.createApplicationContext(W6Module, { logger: false });
    const semaphores = app.get(SemaphoreService);
    return {
      run: (fn) => semaphores.run(key, fn, { permits }),
      gaveUp: (error) => error instanceof LockTimeoutError,
      close: () => app.close(),
    };
  }
  const { default: Redis } = await import('ioredis');
  const { Semaphore, TimeoutError } = await import('redis-semaphore');
  const client = new Redis(redisUrl);
  await client.ping();
  const options = variant === 'redis-semaphore-1ms' ? { retryInterval: 1 } : {};
  return {
    async run(fn) {
      const semaphore = new Semaphore(client, key, permits, options);
      await semaphore.acquire();
      try {
        await fn();
      } finally {
        await semaphore.release();
      }
    },
    gaveUp: (error) => error instanceof TimeoutError,
    close: async () => void (await client.quit()),
  };
}

/** Parent side: one run of `variant` on `redisUrl`. */
export async function runW6(redisUrl: string, variant: W6Variant, params: W6Params): Promise<W6Result> {
  const script = join(__dirname, '..', 'w6-worker.js');
  const children: ChildProcess[] = [];
  try {
    const results = Array.from({ length: params.processes }, () => {
      const child = spawn(process.execPath, [script, redisUrl, variant, JSON.stringify(params)], { stdio: ['pipe', 'pipe', 'inherit'] });
      children.push(child);
      const lines = createInterface({ input: child.stdout! });
      let onReady: () => void = () => undefined;
      const ready = new Promise<void>((resolve) => (onReady = resolve));
      const result = new Promise<W6Records>((resolve, reject) => {
        lines.on('line', (line) => {
          if (line === 'ready') onReady();
          else if (line.startsWith('result ')) resolve(JSON.parse(line.slice('result '.length)) as W6Records);
        });
        child.once('exit', (code) => reject(new Error(`W6 worker exited ${code} without a result`)));
      });
      result.catch(() => undefined);
      return { child, ready, result };
    });
    await Promise.race([Promise.all(results.map((r) => r.ready)), Promise.all(results.map((r) => r.result))]);
    const startAt = now() + 200;
    const stopAt = startAt + params.durationMs;
    for (const { child } of results) child.stdin!.write(`go ${startAt} ${stopAt}\n`);
    const records = await Promise.all(results.map((r) => r.result));
    return summarize(variant, records, params, startAt, stopAt);
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

function summarize(variant: W6Variant, perProcess: W6Records[], params: W6Params, startAt: number, stopAt: number): W6Result {
  const acquisitions: number[] = [];
  const releases: number[] = [];
  const events: Array<[number, number]> = [];
  const perTask = new Array<number>(params.processes * params.tasks).fill(0);
  let giveUps = 0;
  perProcess.forEach((records, p) => {
    giveUps += records.giveUps;
    for (let i = 0; i < records.acquiredAt.length; i++) {
      acquisitions.push(records.acquiredAt[i]);
      releases.push(records.releasedAt[i]);
      events.push([records.acquiredAt[i], 1], [records.releasedAt[i], -1]);
      if (records.acquiredAt[i] >= startAt && records.acquiredAt[i] < stopAt) perTask[p * params.tasks + records.task[i]] += 1;
    }
  });
  acquisitions.sort((a, b) => a - b);
  releases.sort((a, b) => a - b);
  // A release stamp comes just before the library's release call, so at equal times count releases first.
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let inside = 0;
  let maxInside = 0;
  for (const [, delta] of events) maxInside = Math.max(maxInside, (inside += delta));
  const latencies: number[] = [];
  for (let k = 0; k + params.permits < acquisitions.length && k < releases.length; k++) {
    const acquiredAt = acquisitions[k + params.permits];
    if (acquiredAt >= startAt && acquiredAt < stopAt) latencies.push(Math.max(0, acquiredAt - releases[k]));
  }
  const inWindow = perTask.reduce((a, b) => a + b, 0);
  const max = Math.max(...perTask);
  return {
    variant,
    handoffsPerSec: inWindow / ((stopAt - startAt) / 1000),
    latencyP50Ms: median(latencies),
    latencyP99Ms: percentile(latencies, 99),
    fairness: max > 0 ? Math.min(...perTask) / max : 0,
    maxInside,
    giveUps,
  };
}

/** Runs every variant `repetitions` times on a redis-server of its own; returns the medians' table. */
export async function runW6Bench(quick: boolean, log: (line: string) => void): Promise<string> {
  const repetitions = quick ? 1 : 3;
  const tables = [W6_HEADING, ''];
  for (const config of W6_CONFIGS) {
    const params = quick ? { ...config.params, durationMs: 1000 } : config.params;
    tables.push(await runW6Config(config.label, params, repetitions, log));
  }
  return tables.join('\n');
}

async function runW6Config(label: string, params: W6Params, repetitions: number, log: (line: string) => void): Promise<string> {
  const redis = await startBenchRedis();
  const runs = new Map<W6Variant, W6Result[]>(W6_VARIANTS.map((v) => [v, []]));
  try {
    for (let rep = 1; rep <= repetitions; rep++) {
      for (let i = 0; i < W6_VARIANTS.length; i++) {
        const variant = W6_VARIANTS[(i + rep - 1) % W6_VARIANTS.length];
        const started = Date.now();
        try {
          runs.get(variant)!.push(await runW6(redis.url, variant, params));
          log(`W6 ${label} rep ${rep} ${variant}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
        } catch (error) {
          log(`W6 ${label} rep ${rep} ${variant}: FAILED ${error instanceof Error ? error.message : String(error)}`);
        }
      }
    }
  } finally {
    await redis.stop();
  }
  return renderW6(label, runs, params, repetitions);
}

function renderW6(label: string, runs: Map<W6Variant, W6Result[]>, params: W6Params, repetitions: number): string {
  const med = (results: W6Result[], pick: (r: W6Result) => number) => median(results.map(pick));
  const ours = runs.get('ours') ?? [];
  const oursRate = med(ours, (r) => r.handoffsPerSec);
  const oursP50 = med(ours, (r) => r.latencyP50Ms);
  const rows = W6_VARIANTS.map((variant) => {
    const results = runs.get(variant) ?? [];
    if (results.length === 0) return `| ${variant} | failed | | | | | | |`;
    const rate = med(results, (r) => r.handoffsPerSec);
    const p50 = med(results, (r) => r.latencyP50Ms);
    const maxInside = Math.max(...results.map((r) => r.maxInside));
    const safe = maxInside <= params.permits ? `${maxInside}` : `**${maxInside} > ${params.permits}**`;
    return (
      `| ${variant} | ${fmt(rate)} | ${variant === 'ours' ? '1' : fmt(rate / oursRate)} | ${fmt(p50)} | ` +
      `${fmt(med(results, (r) => r.latencyP99Ms))} | ${variant === 'ours' ? '1' : fmt(p50 / oursP50)} | ` +
      `${fmt(med(results, (r) => r.fairness), 2)} | ${safe} |`
    );
  });
  return [
    `### W6 ${label}`,
    '',
    `${params.processes} processes x ${params.tasks} tasks on one semaphore of ${params.permits} permits, each holding ` +
      `its permit ${params.holdMs} ms and asking again, ${params.durationMs} ms; medians of ${repetitions} run(s). ` +
      'Hand-off latency: the k-th release to the (k + permits)-th acquisition, on the monotonic clock all processes share. ' +
      '`ours` is `SemaphoreService.run` (module defaults); `redis-semaphore` is its `Semaphore` at its defaults (10 ms retry) ' +
      'and with `retryInterval: 1`.',
    '',
    '| variant | hand-offs/s | vs ours | latency p50 ms | latency p99 ms | p50 vs ours | fairness (min/max per task) | max holders seen |',
    '| :-- | --: | --: | --: | --: | --: | --: | --: |',
    ...rows,
    '',
  ].join('\n');
}

/**
 * The W6 part of `npm run bench` (after the other workloads; `BENCH_W6=only` runs it alone,
 * `BENCH_W6=0` skips it): prints its tables and, when `write`, puts them in RESULTS.md in place of
 * the previous W6 section.
 */
export async function runW6Section(write: boolean, resultsFile: string, log: (line: string) => void): Promise<void> {
  const { existsSync, readFileSync, writeFileSync } = await import('node:fs');
  const quick = process.env.BENCH_QUICK === '1';
  const section = await runW6Bench(quick, log);
  process.stdout.write(`\n${section}\n`);
  if (!write) return;
  const previous = existsSync(resultsFile) ? readFileSync(resultsFile, 'utf8') : '# Benchmark results\n';
  const start = previous.indexOf(W6_HEADING);
  const kept = start === -1 ? previous.trimEnd() : previous.slice(0, start).trimEnd();
  const note = quick ? '\n_W6 from a `BENCH_QUICK=1` run (1 s per run, one repetition)._\n' : '';
  writeFileSync(resultsFile, `${kept}\n\n${section}${note}`);
  log(`wrote W6 into ${resultsFile}`);
}
