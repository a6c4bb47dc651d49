/**
 * `npm run bench`: starts its own pinned redis-server (or uses REDIS_URL), measures the floors and
 * every adapter x workload in fresh processes, several repetitions, prints medians and ratios
 * against this library, and writes bench/RESULTS.md (full runs only).
 *
 * Environment: BENCH_QUICK=1 (small sizes, one repetition), BENCH_REPS=n, BENCH_ADAPTERS=id,id,
 * BENCH_WORKLOADS=w1,w3 (`cost`: the cost-per-operation section, workloads/cost.ts; `board`: the lock board's cost per
 * refresh, workloads/board-cost.ts, only when asked), REDIS_URL=redis://127.0.0.1:port (a server the bench may FLUSHALL),
 * BENCH_NO_PIN=1, BENCH_RTT_MS=0.5 (every client and floor through a delay relay with that round
 * trip; its figures go to a RESULTS.md section of their own, see harness/real-network-section.ts).
 * `node dist/bench/run.js --from dist/bench/last-run.json` only re-renders the report (and
 * RESULTS.md) from a previous run's raw figures, e.g. after editing closing-note.md; `--cost-from
 * dist/bench/last-cost-run.json` the same for the cost section (its Node's subsection).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem, type as osType } from 'node:os';
import { join } from 'node:path';
import { ADAPTERS } from './adapters';
import { AdapterSpec, measures, MeasuredOutside } from './adapters/adapter';
import { runWakeFloor } from './floors/pubsub-wake';
import type { RoundTripFloor } from './floors/round-trips';
import { redisCliLatency } from './floors/redis-cli-latency';
import type { Collected, Outcome } from './harness/collected';
import { NODE_CORE, pinningAvailable, REDIS_CORE } from './harness/cpu';
import { DelayRelay, startDelayRelay } from './harness/delay-relay';
import { networkModeFromEnv, oneWayDelayUs } from './harness/network-mode';
import { keptRealNetworkSections, renderRealNetworkSection, writeRealNetworkSection } from './harness/real-network-section';
import { adminClient, startBenchRedis } from './harness/redis-server';
import { renderReport, summarize } from './harness/report';
import { currentRevision } from './harness/revision';
import { BenchSettings, FULL, JOB_TIMEOUT_MS, OURS_ONLY, QUICK, REPEAT_ONLY_UNDER_MS, WorkloadId, WORKLOADS } from './harness/settings';
import { runJob } from './harness/worker-process';
import { runW3 } from './workloads/w3-contended';
import { runW4 } from './workloads/w4-handoff';
import { runW6Section, W6_HEADING } from './workloads/w6-semaphore';
import { MEMORY_HEADING, runMemorySection } from './workloads/memory-per-name';
import { keptCostSection, renderCostFrom, runCostSection } from './workloads/cost';
import { runBoardSection } from './workloads/board-cost';
import { keptBoardSection } from './workloads/board-report';
import { hasRedissonLayoutRows, keptRedissonLayoutSection, renderRedissonLayoutSection, writeRedissonLayoutSection } from './harness/redisson-layout-section';

const BENCH_SOURCES = join(__dirname, '..', '..', 'bench');
const RESULTS_FILE = join(BENCH_SOURCES, 'RESULTS.md');
/** Hand-written analysis of the last full run (misses, profiles), appended to RESULTS.md. */
const CLOSING_NOTE_FILE = join(BENCH_SOURCES, 'closing-note.md');
const RAW_FILE = join(__dirname, 'last-run.json');
const COST_RAW_FILE = join(__dirname, 'last-cost-run.json');
const BOARD_RAW_FILE = join(__dirname, 'last-board-run.json');

function chosenSettings(): BenchSettings {
  const base = process.env.BENCH_QUICK === '1' ? QUICK : FULL;
  const reps = Number(process.env.BENCH_REPS);
  return Number.isInteger(reps) && reps > 0 ? { ...base, repetitions: reps } : base;
}

function listFromEnv<T extends string>(name: string, known: readonly T[]): T[] {
  const raw = process.env[name];
  if (!raw) return [...known];
  const wanted = raw.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = wanted.filter((w) => !known.includes(w as T));
  if (unknown.length) throw new Error(`${name}: unknown ${unknown.join(', ')}; known: ${known.join(', ')}`);
  return wanted as T[];
}

const load = (): string => loadavg().map((l) => l.toFixed(2)).join(' ');
const log = (line: string): void => {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
};

/** Keeps the orchestrator itself off Redis's core. */
function pinSelf(): void {
  if (pinningAvailable()) spawnSync('taskset', ['-a', '-p', '-c', NODE_CORE, String(process.pid)], { stdio: 'ignore' });
}

async function attempt<T>(what: string, work: () => Promise<T>): Promise<Outcome<T> & { ms: number }> {
  const started = Date.now();
  try {
    const value = await work();
    const ms = Date.now() - started;
    log(`${what}: ${(ms / 1000).toFixed(1)} s`);
    return { ok: true, value, ms };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    log(`${what}: FAILED ${message.split('\n')[0]}`);
    return { ok: false, error: message, ms: Date.now() - started };
  }
}

/** Where the clients connect: redis-server itself, or the delay relay in front of it. */
interface ClientEndpoint {
  readonly url: string;
  readonly host: string;
  readonly port: number;
}

async function runWorkload(clients: ClientEndpoint, settings: BenchSettings, spec: AdapterSpec, workload: WorkloadId): Promise<unknown> {
  if (spec.external) return spec.external.run(workload, clients.url, settings, JOB_TIMEOUT_MS);
  const run = { redisUrl: clients.url, adapter: spec.id, timeoutMs: JOB_TIMEOUT_MS };
  switch (workload) {
    case 'w3':
      return runW3({ ...run, params: settings.w3 });
    case 'w4':
      return runW4({ ...run, params: settings.w4 });
    default:
      return runJob({ task: workload, adapter: spec.id, redisUrl: clients.url, params: settings[workload] }, JOB_TIMEOUT_MS);
  }
}

const roundTripFloor = (url: string, settings: BenchSettings): Promise<RoundTripFloor> =>
  runJob<RoundTripFloor>({ task: 'floor-round-trips', redisUrl: url, params: settings.roundTrips }, JOB_TIMEOUT_MS);

/**
 * The round-trip floors and `redis-cli --latency`, at the start of each repetition, as the clients
 * see them; behind the relay also straight to redis-server, so the report shows the RTT it added.
 */
async function measureRoundTrips(clients: ClientEndpoint, directUrl: string, settings: BenchSettings, collected: Collected, rep: number): Promise<void> {
  const roundTrips = await attempt(`rep ${rep} floor: round trips`, () => roundTripFloor(clients.url, settings));
  if (roundTrips.ok) collected.floors.roundTrips.push(roundTrips.value);
  if (clients.url !== directUrl) {
    const direct = await attempt(`rep ${rep} floor: round trips without the relay`, () => roundTripFloor(directUrl, settings));
    if (direct.ok) (collected.floors.directRoundTrips ??= []).push(direct.value);
  }
  const cli = redisCliLatency(clients.host, clients.port, settings.cliLatencySeconds);
  if (cli) collected.floors.cliLatency.push(cli);
}

/**
 * The pub/sub wake floor. Waking an idle process costs anything from 1 to 4 ms on a shared VM,
 * depending on what else runs, so it is measured right before this library's W4 run it is compared
 * with (or at the start of the repetition when that run is not part of this bench).
 */
async function measureWake(clients: ClientEndpoint, settings: BenchSettings, collected: Collected, rep: number): Promise<void> {
  const wake = await attempt(`rep ${rep} floor: pub/sub wake`, () => runWakeFloor(clients.url, settings.wake, JOB_TIMEOUT_MS));
  if (wake.ok) collected.floors.wake.push(wake.value);
}

async function main(): Promise<void> {
  const costFrom = process.argv.indexOf('--cost-from');
  if (costFrom !== -1) return renderCostFrom(process.argv[costFrom + 1], process.env.BENCH_WRITE === '1', RESULTS_FILE);
  const from = process.argv.indexOf('--from');
  if (from !== -1) {
    const earlier = collectedFrom(process.argv[from + 1]);
    report(earlier, true, coversEverything(earlier));
    return;
  }
  if (process.env.BENCH_W6 === 'only') return runW6Section(process.env.BENCH_WRITE === '1', RESULTS_FILE, log);
  if (process.env.BENCH_MEMORY === 'only') return runMemorySection(process.env.BENCH_WRITE === '1', RESULTS_FILE, log);
  pinSelf();
  const network = networkModeFromEnv();
  const settings = chosenSettings();
  // `cost` is a section of its own (workloads/cost.ts), with its own adapters and server; so is
  // `board` (workloads/board-cost.ts), which runs only when asked for.
  const asked = (process.env.BENCH_WORKLOADS ?? '').split(',').map((w) => w.trim());
  const costWanted = asked.includes('cost');
  const boardWanted = asked.includes('board');
  if (costWanted || boardWanted) process.env.BENCH_WORKLOADS = asked.filter((w) => w !== 'cost' && w !== 'board').join(',');
  if ((costWanted || boardWanted) && !process.env.BENCH_WORKLOADS) {
    if (network.kind === 'relay') throw new Error('the cost and board workloads run on loopback only (unset BENCH_RTT_MS)');
    if (costWanted) await runCostSection(process.env.BENCH_WRITE === '1', RESULTS_FILE, COST_RAW_FILE, log);
    if (boardWanted) await runBoardSection(process.env.BENCH_WRITE === '1', RESULTS_FILE, BOARD_RAW_FILE, log);
    return;
  }
  const adapterIds = listFromEnv('BENCH_ADAPTERS', ADAPTERS.map((a) => a.id));
  const workloads = listFromEnv('BENCH_WORKLOADS', WORKLOADS);
  // RESULTS.md's main tables are loopback figures: a relay run is never a full run (it has its own section).
  const fullRun = settings === FULL && !process.env.BENCH_ADAPTERS && !process.env.BENCH_WORKLOADS && network.kind === 'loopback';

  const redis = await startBenchRedis();
  let relay: DelayRelay | undefined;
  const stopServers = async (): Promise<void> => {
    await relay?.stop();
    await redis.stop();
  };
  const interrupted = (): void => void stopServers().finally(() => process.exit(130));
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    if (network.kind === 'relay') relay = await startDelayRelay(redis.port, oneWayDelayUs(network));
  } catch (error) {
    await stopServers();
    throw error;
  }
  // Every adapter and floor connects here; only the harness's FLUSHALL (and, behind the relay, one
  // PING floor for comparison) goes straight to redis-server.
  const clients: ClientEndpoint = relay ? { url: relay.url, host: '127.0.0.1', port: relay.port } : redis;
  const cpu = cpus();
  const collected: Collected = {
    settings,
    startedAt: new Date(),
    network,
    revision: currentRevision(),
    machine: {
      cpuModel: cpu[0]?.model ?? 'unknown',
      cores: cpu.length,
      memoryGb: Math.round(totalmem() / 2 ** 30),
      os: `${osType()} ${release()}`,
      node: process.version,
      redis: redis.version,
      redisSource: redis.owned ? `redis-server started by the bench on 127.0.0.1:${redis.port}, no persistence` : `REDIS_URL ${redis.url}`,
      pinning: pinningAvailable()
        ? `taskset: redis-server on core ${redis.owned ? REDIS_CORE : '(external, not pinned)'}, every Node process (bench and workers) on core ${NODE_CORE}${relay ? `; ${relay.pinning}` : ''}`
        : 'none (taskset missing, fewer than 2 cores, or BENCH_NO_PIN=1)',
      loadAverageAtStart: load(),
    },
    floors: { roundTrips: [], wake: [], cliLatency: [] },
    runs: {},
    unavailable: {},
  };
  const specs = ADAPTERS.filter((spec) => adapterIds.includes(spec.id));
  for (const spec of specs) {
    const reason = spec.unavailable();
    if (reason) {
      collected.unavailable[spec.id] = reason;
      log(`${spec.id}: ${reason}`);
    } else collected.runs[spec.id] = {};
  }
  const live = specs.filter((spec) => !collected.unavailable[spec.id]);
  log(`Redis ${redis.version} at ${redis.url}${relay ? `, clients through the delay relay at ${relay.url} (${relay.oneWayUs} us each way)` : ''}; ${live.length} adapters x ${workloads.join(',')} x ${settings.repetitions} repetitions`);

  const admin = adminClient(redis.url);
  const runOnce = new Set<string>();
  try {
    for (let rep = 1; rep <= settings.repetitions; rep++) {
      await admin.flushall();
      await measureRoundTrips(clients, redis.url, settings, collected, rep);
      const wakeBeforeW4 = workloads.includes('w4') && live.some((spec) => spec.reference);
      if (!wakeBeforeW4) await measureWake(clients, settings, collected, rep);
      // Rotate the order each repetition so no adapter always runs first (or last) on a shared machine.
      const order = live.map((_, i) => live[(i + rep - 1) % live.length]);
      for (const spec of order) {
        for (const workload of workloads) {
          if (runOnce.has(`${spec.id} ${workload}`)) continue;
          if (OURS_ONLY.includes(workload) && !spec.ours) continue;
          if (!measures(spec, workload)) continue;
          await admin.flushall(); // a killed worker must not leave a held lock to the next run
          if (workload === 'w4' && spec.reference) await measureWake(clients, settings, collected, rep);
          const { ms, ...outcome } = await attempt(`rep ${rep} ${spec.id} ${workload}`, () => runWorkload(clients, settings, spec, workload));
          // A JVM's start and JIT warm-up are not the run's length.
          const setupMs = outcome.ok ? ((outcome.value as Partial<MeasuredOutside>).setupMs ?? 0) : 0;
          if (ms - setupMs > REPEAT_ONLY_UNDER_MS) runOnce.add(`${spec.id} ${workload}`);
          const runs = collected.runs[spec.id] as Record<WorkloadId, Array<Outcome<unknown>>>;
          (runs[workload] ??= []).push(outcome as Outcome<unknown>);
        }
      }
    }
  } finally {
    admin.disconnect();
    await stopServers();
  }
  collected.finishedAt = new Date();
  collected.machine.loadAverageAtEnd = load();

  mkdirSync(__dirname, { recursive: true });
  writeFileSync(RAW_FILE, JSON.stringify(collected, null, 1));
  report(collected, fullRun || process.env.BENCH_WRITE === '1', fullRun);
  if (network.kind === 'relay') {
    // Both start servers of their own without the relay: loopback figures, not part of this mode.
    log('relay mode: the memory section and W6 are left out (they run on loopback only)');
    return;
  }
  if (costWanted || (fullRun && process.env.BENCH_COST !== '0')) {
    await runCostSection(fullRun || process.env.BENCH_WRITE === '1', RESULTS_FILE, COST_RAW_FILE, log);
  }
  if (boardWanted) await runBoardSection(process.env.BENCH_WRITE === '1', RESULTS_FILE, BOARD_RAW_FILE, log);
  if (process.env.BENCH_MEMORY !== '0') await runMemorySection(fullRun || process.env.BENCH_WRITE === '1', RESULTS_FILE, log);
  if (process.env.BENCH_W6 !== '0') await runW6Section(fullRun || process.env.BENCH_WRITE === '1', RESULTS_FILE, log);
}

/**
 * Prints the report and, for a full run, writes RESULTS.md (a relay run, or a partial run with
 * Redisson-layout rows: its own section of it); exit code 2 on a safety failure.
 */
function report(collected: Collected, writeResults: boolean, fullRun: boolean): void {
  const summary = summarize(collected);
  const body = renderReport(summary);
  const redissonSection = hasRedissonLayoutRows(summary) ? renderRedissonLayoutSection(summary) : undefined;
  process.stdout.write(`\n${body}\n${redissonSection ? `\n${redissonSection}\n` : ''}`);
  if (writeResults && collected.network?.kind === 'relay') {
    writeRealNetworkSection(RESULTS_FILE, renderRealNetworkSection(summary));
    log(`wrote the real-network section of ${RESULTS_FILE}`);
  } else if (writeResults && !fullRun && redissonSection) {
    // A partial run (e.g. BENCH_ADAPTERS=ours-run,ours-run-redisson,redisson-java-4.7.0) keeps the main tables.
    writeRedissonLayoutSection(RESULTS_FILE, redissonSection);
    log(`wrote the Redisson-layout section of ${RESULTS_FILE}`);
  } else if (writeResults) {
    const note = existsSync(CLOSING_NOTE_FILE) ? `\n${readFileSync(CLOSING_NOTE_FILE, 'utf8')}` : '';
    // The W6 section (written by its own run, see runW6Section) is kept until W6 runs again.
    const previous = existsSync(RESULTS_FILE) ? readFileSync(RESULTS_FILE, 'utf8') : '';
    const w6Start = previous.indexOf(W6_HEADING);
    const w6 = w6Start >= 0 ? `\n${previous.slice(w6Start)}` : '';
    // So is the memory section (runMemorySection), which sits before W6.
    const memoryStart = previous.indexOf(MEMORY_HEADING);
    const memory = memoryStart >= 0 ? `\n${previous.slice(memoryStart, w6Start > memoryStart ? w6Start : undefined).trimEnd()}\n` : '';
    // And the real-network sections (BENCH_RTT_MS runs), which sit before the memory section.
    const realNetwork = keptRealNetworkSections(previous);
    // And the cost section (BENCH_WORKLOADS=cost), which sits between those and the memory section.
    const cost = keptCostSection(previous);
    // And the lock board's section (BENCH_WORKLOADS=board), right after the cost section.
    const board = keptBoardSection(previous);
    // The Redisson layout's section: this run's when it had those rows, else the previous one.
    const redisson = redissonSection ? `\n${redissonSection.trimEnd()}\n` : keptRedissonLayoutSection(previous);
    writeFileSync(
      RESULTS_FILE,
      `# Benchmark results\n\nWritten by \`npm run bench\` (bench/run.ts); bench/README.md says what each workload does.\n\n${body}\n${note}${redisson}${realNetwork}${cost}${board}${memory}${w6}`,
    );
    log(`wrote ${RESULTS_FILE}`);
  } else log('partial or quick run: bench/RESULTS.md left as it was (BENCH_WRITE=1 to write it anyway)');
  if (summary.safetyFailures.length) {
    log(`SAFETY FAILURE: ${summary.safetyFailures.join('; ')}`);
    process.exitCode = 2;
  }
}

/** Whether an earlier run measured every adapter and every workload (a full run). */
function coversEverything(collected: Collected): boolean {
  const reference = ADAPTERS.find((spec) => spec.reference);
  const runs = reference ? collected.runs[reference.id] : undefined;
  return ADAPTERS.every((spec) => spec.id in collected.runs || spec.id in collected.unavailable) && !!runs && WORKLOADS.every((w) => w in runs);
}

/** `--from <raw.json>`: the collected figures of an earlier run, dates restored. */
function collectedFrom(file: string): Collected {
  const raw = JSON.parse(readFileSync(file, 'utf8')) as Collected & { startedAt: string; finishedAt?: string };
  return { ...raw, startedAt: new Date(raw.startedAt), finishedAt: raw.finishedAt ? new Date(raw.finishedAt) : undefined };
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});

