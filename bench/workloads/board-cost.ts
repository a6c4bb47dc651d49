/**
 * Lock board: what one refresh costs Redis (`BENCH_WORKLOADS=board`, or directly:
 * `npx ts-node --transpile-only bench/workloads/board-cost.ts`; bench/README.md says how).
 *
 * The issue's demand: "Redis time per refresh with 10,000 locks and with 1,000,000 unrelated keys.
 * The board never blocks Redis, and its walk stays within the stated budget."
 *
 * On a redis-server of its own (pinned to core 0, at nice -10: the machine is shared), a holder app
 * (a LockModule in a process of its own, workloads/board-holder.ts) takes real locks with
 * `getLock(name).tryLock({ leaseTime: 1 h })`, so the keys are the library's own layout; unrelated
 * keys are written with MSET (`other:<n>` = `value:<n>`, what `DEBUG POPULATE n other:` writes;
 * DEBUG is off by default on Redis 7). Scenarios: A 10,000 held locks; D 100,000 held locks (as
 * many names as the walk remembers); B 1,000,000 unrelated keys and 100 held locks; C 1,000,000
 * unrelated keys and 10,000 held locks (BENCH_BOARD_SCENARIOS=A,B picks some). Each runs at the
 * default budget and bigger ones, each with a fresh board app in this process (LockModule +
 * LockBoardModule.forRoot({ guard: false, refreshMs: 250, budget }), Express, `app.listen(0)`).
 *
 * A refresh is one `GET /lock-board/api/snapshot`, `refreshMs` + 30 ms after the previous answer
 * (so each is a new refresh; checked by its `serverTime`):
 * - phase 1: a warm-up, then at least 20 (until the walk began its second pass, at most 150) with
 *   `INFO cpu` + `INFO commandstats` right before and after. Redis µs = the `usec` of the commands
 *   the board's connection sent (counted here by command name), scripts whole: a script's `usec`
 *   includes its inner commands' on Redis 7.0 (bench/README.md, "Cost per operation"). The slow
 *   log at 5 ms (any client) and `INFO latencystats` (p100 included) cover the phase.
 * - phase 2: 5 refreshes at `slowlog-log-slower-than 0`: every command the board sent, with its
 *   duration; each SCAN replayed from its cursor without MATCH/TYPE (the keys Redis really
 *   visited, against the budget); the SCANs and a sample of the EVALSHAs replayed alone with the
 *   same arguments, kept when redis-server was not preempted meanwhile (Redis's own work on each:
 *   the slow log times commands on the wall clock).
 * - This process: CPU and event-loop delay (`monitorEventLoopDelay`) per request, and `heapUsed`
 *   after a full GC before the first refresh and after the last.
 */
import 'reflect-metadata';
import { Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { LockModule } from '../../lib';
import { LockBoardModule, type LockBoardBudget, type BoardSnapshot } from '../../lib/board';
import { now, sleep } from '../harness/clock';
import { NODE_CORE, pinningAvailable, REDIS_CORE } from '../harness/cpu';
import { table } from '../harness/markdown';
import { adminClient, startBenchRedis } from '../harness/redis-server';
import { describeRevision, type Revision } from '../harness/revision';
import { fmt, median, percentile } from '../harness/stats';
import type { HolderReply, HolderRequest } from './board-holder';
import { renderBoard, summarize, writeBoardSection } from './board-report';
import { BOARD_HEADING, budgetLabel, DEFAULT_BUDGET, GAP_MS, REFRESH_MS, REPLAYED_SCRIPTS_PER_REFRESH, type BoardResults, type BoardRun, type CommandStat, type RefreshSample, type Scenario } from './board-shared';
export { BOARD_HEADING, budgetLabel } from './board-shared';
export type { BoardResults, BoardRun, RefreshSample } from './board-shared';

/** The repository: two levels up from bench/workloads (ts-node), three from dist/bench/workloads. */
const REPO = existsSync(join(__dirname, '..', '..', 'package.json')) ? join(__dirname, '..', '..') : join(__dirname, '..', '..', '..');

/** harness/revision.ts's, from REPO (which it finds only when compiled). */
function revision(): Revision | undefined {
  const git = (args: string[]): string | undefined => {
    const run = spawnSync('git', args, { cwd: REPO, encoding: 'utf8' });
    return run.status === 0 ? run.stdout.trim() : undefined;
  };
  const head = git(['rev-parse', '--short', 'HEAD']);
  if (!head) return undefined;
  return {
    head,
    library: git(['log', '-1', '--format=%h', '--', 'lib', 'lua']) ?? head,
    dirty: (git(['status', '--porcelain', '--', 'lib', 'lua', 'bench']) ?? '') !== '',
  };
}

/** Which lib/board/ was measured: it may differ from any commit (uncommitted work). */
function boardSources(): string {
  const folder = join(REPO, 'lib', 'board');
  if (!existsSync(folder)) return 'unknown (no lib/board beside the bench)';
  const files = readdirSync(folder)
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.generated.ts'))
    .sort();
  const hash = createHash('sha1');
  let newest = 0;
  for (const file of files) {
    hash.update(file).update(readFileSync(join(folder, file)));
    newest = Math.max(newest, statSync(join(folder, file)).mtimeMs);
  }
  return `${hash.digest('hex').slice(0, 12)} (newest file ${new Date(newest).toISOString().slice(0, 16).replace('T', ' ')} UTC)`;
}


/** BENCH_QUICK=1: a tenth of the locks and keys, fewer refreshes (trying the harness out). */
const QUICK = process.env.BENCH_QUICK === '1';
const MIN_REFRESHES = QUICK ? 5 : 20;
const MAX_REFRESHES = 150;
const SLOWLOG_REFRESHES = QUICK ? 2 : 5;
/** Phase 1 logs every command of this many µs or more (the line for "blocks Redis"). */
const SLOW_US = 5_000;
const BOARD_CONNECTION = 'bench-board';
/** Instance heartbeats (a third of this) well apart from the measured windows. */
const WATCHDOG_MS = 300_000;


export const BOARD_SCENARIOS: readonly Scenario[] = [
  { id: 'A', label: '10,000 held locks', locks: 10_000, otherKeys: 0, budgets: [{}, { locksPerRefresh: 10_000 }] },
  // As many locks as the walk remembers names (MAX_KNOWN_NAMES): its memory at the limit.
  { id: 'D', label: '100,000 held locks', locks: 100_000, otherKeys: 0, budgets: [{}, { keysPerRefresh: 100_000, locksPerRefresh: 10_000 }] },
  {
    id: 'B',
    label: '1,000,000 unrelated keys + 100 held locks',
    locks: 100,
    otherKeys: 1_000_000,
    budgets: [{}, { keysPerRefresh: 100_000 }, { keysPerRefresh: 1_000_000 }],
  },
  { id: 'C', label: '1,000,000 unrelated keys + 10,000 held locks', locks: 10_000, otherKeys: 1_000_000, budgets: [{}, { keysPerRefresh: 100_000, locksPerRefresh: 10_000 }] },
];





// ---------------------------------------------------------------------------------------------
// Measuring

let gcFunction: (() => void) | undefined;
function fullGc(): void {
  if (!gcFunction) {
    const global = globalThis as { gc?: () => void };
    if (typeof global.gc === 'function') gcFunction = global.gc;
    else {
      setFlagsFromString('--expose-gc');
      gcFunction = runInNewContext('gc') as () => void;
    }
  }
  gcFunction();
  gcFunction();
}

function heapUsed(): number {
  fullGc();
  return process.memoryUsage().heapUsed;
}

/** Commands `INFO commandstats` names with their subcommand (`script|load`). */
const CONTAINER_COMMANDS = new Set(['script', 'client', 'config', 'command', 'memory', 'object', 'slowlog', 'latency', 'cluster']);
/** The bench's own commands, left out of every count. */
const MEASURING = /^(info|client\|.*|config\|.*|slowlog\|.*|latency\|.*)$/;

/** Counts what the board app's command connection sends, by commandstats name, while `on`. */
class BoardCommands {
  on = false;
  readonly byName = new Map<string, number>();
  /** `SCAN 0 ...` sent since `start()`: the walk began a pass. */
  passStarts = 0;
  private static installed: BoardCommands | undefined;

  static install(): BoardCommands {
    if (BoardCommands.installed) return BoardCommands.installed;
    const counter = new BoardCommands();
    const prototype = Redis.prototype as unknown as { sendCommand(this: Redis, ...args: unknown[]): unknown };
    const original = prototype.sendCommand;
    prototype.sendCommand = function countedSendCommand(this: Redis, ...args: unknown[]) {
      if (counter.on && this.options.connectionName === BOARD_CONNECTION) {
        const command = args[0] as { name?: string; args?: unknown[] };
        const name = String(command?.name ?? '?').toLowerCase();
        const first = command?.args?.[0];
        const key = CONTAINER_COMMANDS.has(name) && first !== undefined ? `${name}|${String(first).toLowerCase()}` : name;
        counter.byName.set(key, (counter.byName.get(key) ?? 0) + 1);
        if (name === 'scan' && String(first) === '0') counter.passStarts += 1;
      }
      return original.apply(this, args);
    };
    BoardCommands.installed = counter;
    return counter;
  }

  start(): void {
    this.byName.clear();
    this.passStarts = 0;
    this.on = true;
  }

  stop(): Record<string, number> {
    this.on = false;
    return Object.fromEntries(this.byName);
  }
}

interface ServerReading {
  readonly stats: Map<string, CommandStat>;
  readonly cpuMs: number;
}

/** Involuntary context switches of the process's main thread so far; undefined where /proc cannot tell. */
function preemptionsOf(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const count = /^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8'))?.[1];
    return count === undefined ? undefined : Number(count);
  } catch {
    return undefined;
  }
}


async function serverReading(admin: Redis): Promise<ServerReading> {
  const info = String(await admin.call('INFO', 'cpu', 'commandstats'));
  const stats = new Map<string, CommandStat>();
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) stats.set(match[1], { calls: Number(match[2]), usec: Number(match[3]) });
  const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return { stats, cpuMs: (field('used_cpu_user') + field('used_cpu_sys')) * 1000 };
}

function statsBetween(before: ServerReading, after: ServerReading): Record<string, CommandStat> {
  const delta: Record<string, CommandStat> = {};
  for (const [name, stat] of after.stats) {
    if (MEASURING.test(name)) continue;
    const was = before.stats.get(name) ?? { calls: 0, usec: 0 };
    if (stat.calls > was.calls) delta[name] = { calls: stat.calls - was.calls, usec: stat.usec - was.usec };
  }
  return delta;
}

/** The µs of the commands the board sent: each name's `usec` in the share of its calls the board sent. */
function attributedUs(server: Record<string, CommandStat>, sent: Record<string, number>): number {
  let usec = 0;
  for (const [name, stat] of Object.entries(server)) usec += stat.usec * Math.min(1, (sent[name] ?? 0) / stat.calls);
  return usec;
}

type SlowEntry = [number, number, number, string[], string, string];

async function takeSlowLog(admin: Redis): Promise<SlowEntry[]> {
  const entries = (await admin.slowlog('GET', '1000000')) as SlowEntry[];
  await admin.slowlog('RESET');
  return entries.reverse();
}

const shownAndFound = (snapshot: BoardSnapshot): { shown: number; found: number } => {
  const shown = snapshot.locks.length + snapshot.semaphores.length;
  const truncated = /Showing ([\d,]+) of ([\d,]+) locks found/.exec(snapshot.walk.message ?? '');
  return { shown, found: truncated ? Number(truncated[2].replace(/,/g, '')) : shown };
};

// ---------------------------------------------------------------------------------------------
// Setting up

/** The holder (workloads/board-holder.ts) in a process of its own, pinned with the bench's Node processes. */
class HolderProcess {
  private readonly replies: HolderReply[] = [];
  private waiting: ((reply: HolderReply) => void) | undefined;
  private exited: string | undefined;

  private constructor(private readonly child: ChildProcess) {
    child.on('message', (reply: HolderReply) => {
      if (this.waiting) {
        const resolve = this.waiting;
        this.waiting = undefined;
        resolve(reply);
      } else this.replies.push(reply);
    });
    child.on('exit', (code, signal) => {
      this.exited = `the board bench's holder exited (${signal ?? code})`;
      this.waiting?.({ failed: this.exited });
      this.waiting = undefined;
    });
  }

  static async start(port: number): Promise<HolderProcess> {
    const typescript = __filename.endsWith('.ts');
    const child = fork(join(__dirname, `board-holder.${typescript ? 'ts' : 'js'}`), [], {
      env: { ...process.env, BOARD_HOLDER_PORT: String(port) },
      execArgv: typescript ? ['-r', 'ts-node/register/transpile-only'] : [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    if (pinningAvailable() && child.pid) spawnSync('taskset', ['-a', '-p', '-c', NODE_CORE, String(child.pid)], { stdio: 'ignore' });
    const holder = new HolderProcess(child);
    await holder.reply();
    return holder;
  }

  /** Takes `order:<from>` .. `order:<to - 1>`, each for an hour. */
  async hold(from: number, to: number): Promise<void> {
    this.child.send({ hold: [from, to] } satisfies HolderRequest);
    await this.reply();
  }

  /** Kills it: the locks stay in Redis until a FLUSHALL (or the server stops). */
  async stop(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGKILL');
    await gone;
  }

  private async reply(): Promise<void> {
    if (this.exited) throw new Error(this.exited);
    const reply = this.replies.shift() ?? (await new Promise<HolderReply>((resolve) => (this.waiting = resolve)));
    if ('failed' in reply) throw new Error(reply.failed);
  }
}

/** `other:<n>` = `value:<n>` for n in [0, count): what DEBUG POPULATE writes, with MSET. */
async function writeOtherKeys(admin: Redis, count: number): Promise<void> {
  const perCommand = 1_000;
  const perPipeline = 20;
  for (let start = 0; start < count; start += perCommand * perPipeline) {
    const pipeline = admin.pipeline();
    for (let first = start; first < Math.min(count, start + perCommand * perPipeline); first += perCommand) {
      const args: string[] = [];
      for (let i = first; i < Math.min(count, first + perCommand); i++) args.push(`other:${i}`, `value:${i}`);
      pipeline.mset(...args);
    }
    await pipeline.exec();
  }
}

async function startBoard(port: number, budget: LockBoardBudget): Promise<{ app: INestApplication; url: string }> {
  @Module({
    imports: [
      LockModule.forRoot({ redis: { host: '127.0.0.1', port, connectionName: BOARD_CONNECTION }, watchdogTimeout: WATCHDOG_MS }),
      LockBoardModule.forRoot({ guard: false, refreshMs: REFRESH_MS, budget }),
    ],
  })
  class BoardBenchModule {}
  const app = await NestFactory.create(BoardBenchModule, { logger: false });
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  return { app, url: `http://127.0.0.1:${address.port}/lock-board/api/snapshot` };
}

// ---------------------------------------------------------------------------------------------
// One scenario x budget

async function measureBudget(
  redisPort: number,
  admin: Redis,
  scenario: Scenario,
  budget: LockBoardBudget,
  log: (line: string) => void,
): Promise<BoardRun> {
  const resolved = { ...DEFAULT_BUDGET, ...budget };
  const counter = BoardCommands.install();
  const setupStarted = Date.now();
  const board = await startBoard(redisPort, budget);
  const setupMs = Date.now() - setupStarted;
  const samples: RefreshSample[] = [];
  const keysInRedis = await admin.dbsize();
  let lastServerTime = 0;
  let passesStarted = 0;
  const pid = Number(/^process_id:(\d+)/m.exec(await admin.info('server'))?.[1]) || undefined;
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  try {
    const heapBefore = heapUsed();
    const refresh = async (phase: RefreshSample['phase']): Promise<RefreshSample> => {
      await sleep(GAP_MS);
      const before = await serverReading(admin);
      const preemptedBefore = preemptionsOf(pid);
      loop.reset();
      counter.start();
      const cpuBefore = process.cpuUsage();
      const started = now();
      const response = await fetch(board.url);
      const body = await response.text();
      const wallMs = now() - started;
      const cpu = process.cpuUsage(cpuBefore);
      const sent = counter.stop();
      const passStarted = counter.passStarts > 0;
      const preemptedAfter = preemptionsOf(pid);
      const loopDelayMaxMs = loop.max / 1e6;
      const after = await serverReading(admin);
      if (response.status !== 200) throw new Error(`board bench: snapshot answered ${response.status}: ${body.slice(0, 200)}`);
      const snapshot = JSON.parse(body) as BoardSnapshot;
      if (snapshot.error) throw new Error(`board bench: snapshot error: ${snapshot.error}`);
      const server = statsBetween(before, after);
      const entries = await takeSlowLog(admin);
      let slow: RefreshSample['slow'];
      let scanVisited: number | undefined;
      let scanCalls: number | undefined;
      let alone: Array<{ name: string; us: number }> | undefined;
      if (phase === 'slowlog') {
        // The board's own connection only: the commands it sent (script internals are logged under the Lua client).
        const own = entries.filter((entry) => entry[5] === BOARD_CONNECTION);
        slow = own.map((entry) => ({ name: String(entry[3][0]).toLowerCase(), us: Number(entry[2]), client: '' }));
        scanVisited = 0;
        scanCalls = 0;
        for (const [, , , args] of own) {
          if (String(args[0]).toLowerCase() !== 'scan') continue;
          const countAt = args.findIndex((arg) => arg.toUpperCase() === 'COUNT');
          const [, keys] = await admin.scan(args[1], 'COUNT', Number(args[countAt + 1]));
          scanVisited += keys.length;
          scanCalls += 1;
        }
        await takeSlowLog(admin);
        alone = await replayAlone(admin, pid, own);
      } else {
        slow = entries.map((entry) => ({ name: String(entry[3][0]).toLowerCase(), us: Number(entry[2]), client: entry[5] || entry[4] }));
      }
      const { shown, found } = shownAndFound(snapshot);
      const sample: RefreshSample = {
        phase,
        wallMs,
        nodeCpuMs: (cpu.user + cpu.system) / 1000,
        redisCpuMs: after.cpuMs - before.cpuMs,
        responseBytes: body.length,
        sent,
        server,
        redisUs: attributedUs(server, sent),
        commandsRun: Object.values(server).reduce((total, stat) => total + stat.calls, 0),
        keysScanned: snapshot.walk.keysScanned,
        complete: snapshot.walk.complete,
        locksShown: shown,
        locksFound: found,
        message: snapshot.walk.message,
        newRefresh: snapshot.serverTime !== lastServerTime,
        passStarted,
        namesFull: /walk (stopped remembering|remembers [\d,]+) names/.test(snapshot.walk.message ?? ''),
        preemptions: preemptedBefore === undefined || preemptedAfter === undefined ? undefined : preemptedAfter - preemptedBefore,
        loopDelayMaxMs,
        slow,
        ...(scanVisited === undefined ? {} : { scanVisited, scanCalls }),
        ...(alone === undefined ? {} : { alone }),
      };
      lastServerTime = snapshot.serverTime;
      if (passStarted) passesStarted += 1;
      samples.push(sample);
      return sample;
    };

    await admin.config('SET', 'slowlog-max-len', '1000000');
    await admin.config('SET', 'slowlog-log-slower-than', String(SLOW_US));
    await admin.config('SET', 'latency-tracking-info-percentiles', '50 99 100');
    await admin.slowlog('RESET');
    await refresh('warm-up');
    await admin.config('RESETSTAT');
    let measured = 0;
    let heapAt10 = Number.NaN;
    // Until the walk began its second pass: the first one's length is then known.
    while (measured < MAX_REFRESHES && (measured < MIN_REFRESHES || passesStarted < 2)) {
      const sample = await refresh('stats');
      measured += 1;
      if (measured === Math.floor(MIN_REFRESHES / 2)) heapAt10 = heapUsed();
      if (measured % 10 === 0) log(`board ${scenario.id} ${budgetLabel(resolved)}: ${measured} refreshes, last ${fmt(sample.redisUs / 1000)} ms Redis, ${fmt(sample.wallMs)} ms wall`);
    }
    const latency: BoardRun['latency'] = {};
    const latencyInfo = String(await admin.call('INFO', 'latencystats'));
    for (const match of latencyInfo.matchAll(/^latency_percentiles_usec_([^:]+):p50=([\d.]+),p99=([\d.]+),p100=([\d.]+)/gm)) {
      if (!MEASURING.test(match[1])) latency[match[1]] = { p50: Number(match[2]), p99: Number(match[3]), p100: Number(match[4]) };
    }
    const heapMid = heapUsed();
    await admin.config('SET', 'slowlog-log-slower-than', '0');
    await admin.slowlog('RESET');
    for (let i = 0; i < SLOWLOG_REFRESHES; i++) await refresh('slowlog');
    await admin.config('SET', 'slowlog-log-slower-than', '10000');
    await admin.slowlog('RESET');
    const heapAfter = heapUsed();
    return { scenario: scenario.id, label: scenario.label, budget: resolved, keysInRedis, locks: scenario.locks, samples, latency, heapBefore, heapAt10, heapMid, heapAfter, setupMs };
  } finally {
    loop.disable();
    counter.on = false;
    await board.app.close();
  }
}

/**
 * Replays the board's SCANs and a sample of its script calls one at a time on the bench's
 * connection, with the same arguments, and keeps the durations (slow log) of those during which
 * redis-server's thread was not preempted: Redis's own work on each command.
 */
async function replayAlone(admin: Redis, pid: number | undefined, own: readonly SlowEntry[]): Promise<Array<{ name: string; us: number }>> {
  const replayable = own.filter(([, , , args]) => !args.some((arg) => /^\.\.\. \(\d+ more (bytes|arguments)\)$/.test(arg)));
  const scans = replayable.filter(([, , , args]) => String(args[0]).toLowerCase() === 'scan');
  const scripts = replayable.filter(([, , , args]) => String(args[0]).toLowerCase() === 'evalsha');
  const step = Math.max(1, Math.ceil(scripts.length / REPLAYED_SCRIPTS_PER_REFRESH));
  const chosen = [...scans, ...scripts.filter((_, i) => i % step === 0)];
  const undisturbed: boolean[] = [];
  for (const [, , , args] of chosen) {
    const before = preemptionsOf(pid);
    await admin.call(String(args[0]), ...args.slice(1));
    const after = preemptionsOf(pid);
    undisturbed.push(before !== undefined && before === after);
  }
  const logged = (await takeSlowLog(admin)).filter((entry) => entry[5] === 'bench-admin' && ['scan', 'evalsha'].includes(String(entry[3][0]).toLowerCase()));
  if (logged.length !== chosen.length) return [];
  return logged.flatMap((entry, i) => (undisturbed[i] ? [{ name: String(entry[3][0]).toLowerCase(), us: Number(entry[2]) }] : []));
}


/** Every scenario x budget on a server of its own. */
export async function runBoardBench(log: (line: string) => void, only?: readonly string[]): Promise<BoardResults> {
  const sourcesAtStart = boardSources();
  const revisionAtStart = describeRevision(revision());
  const redis = await startBenchRedis();
  const admin = adminClient(redis.url);
  const runs: BoardRun[] = [];
  // The machine is shared: a higher priority (nice -10) keeps other work from preempting the
  // server mid-command as often (what is left shows in the run-queue column).
  let reniced = false;
  if (redis.owned && pinningAvailable()) {
    const pid = /^process_id:(\d+)/m.exec(await admin.info('server'))?.[1];
    reniced = !!pid && spawnSync('renice', ['-n', '-10', '-p', pid], { stdio: 'ignore' }).status === 0;
  }
  try {
    let holder: HolderProcess | undefined;
    let held = 0;
    let otherKeys = 0;
    for (const full of BOARD_SCENARIOS) {
      if (only && !only.includes(full.id)) continue;
      const scenario = QUICK ? { ...full, label: `${full.label} (quick: a tenth)`, locks: full.locks / 10, otherKeys: full.otherKeys / 10 } : full;
      // A scenario builds on the one before when it can (C = B + more locks); else from scratch.
      if (scenario.otherKeys < otherKeys || scenario.locks < held) {
        await holder?.stop();
        holder = undefined;
        await admin.flushall();
        held = 0;
        otherKeys = 0;
      }
      const started = Date.now();
      if (scenario.otherKeys > otherKeys) {
        await writeOtherKeys(admin, scenario.otherKeys);
        otherKeys = scenario.otherKeys;
      }
      holder ??= await HolderProcess.start(redis.port);
      await holder.hold(held, scenario.locks);
      held = scenario.locks;
      // The fence keys the acquisitions wrote live 1 s: let them go, then let the dict settle.
      await sleep(3_000);
      log(`board ${scenario.id}: ${scenario.label} ready in ${((Date.now() - started) / 1000).toFixed(1)} s, DBSIZE ${await admin.dbsize()}`);
      for (const budget of scenario.budgets) {
        const run = await measureBudget(redis.port, admin, scenario, budget, log);
        runs.push(run);
        const s = summarize(run);
        log(
          `board ${scenario.id} ${budgetLabel(run.budget)}: ${s.refreshes} refreshes, Redis ${fmt(s.redisMsP50)} ms (max ${fmt(s.redisMsMax)}), ` +
            `longest command ${fmt(s.longestUs)} us, keys ${fmt(s.keysScannedMax)}, pass ${s.passText}, wall ${fmt(s.wallP50)} ms, heap +${fmt(s.heapGrowthMb)} MB`,
        );
      }
    }
    await holder?.stop();
  } finally {
    admin.disconnect();
    await redis.stop();
  }
  const cpu = cpus();
  return {
    date: new Date().toISOString().slice(0, 10),
    node: process.version,
    redis: redis.version,
    cpu: cpu[0]?.model ?? 'unknown',
    cores: cpu.length,
    pinning: pinningAvailable()
      ? `redis-server on core ${REDIS_CORE}${reniced ? ' at nice -10' : ''}, this process (board app and HTTP client) and the holder's on core ${NODE_CORE} (taskset)`
      : 'not pinned',
    revision: revisionAtStart,
    boardSources: boardSources() === sourcesAtStart ? sourcesAtStart : `${sourcesAtStart}, **changed during the run** (now ${boardSources()})`,
    quick: QUICK,
    slowlogRefreshes: SLOWLOG_REFRESHES,
    runs,
  };
}

/** `BENCH_WORKLOADS=board`: runs, prints, and with `write` stores the section; raw figures in `rawFile`. */
export async function runBoardSection(write: boolean, resultsFile: string, rawFile: string, log: (line: string) => void): Promise<void> {
  const only = process.env.BENCH_BOARD_SCENARIOS?.split(',').map((s) => s.trim().toUpperCase());
  const results = await runBoardBench(log, only);
  mkdirSync(dirname(rawFile), { recursive: true });
  writeFileSync(rawFile, JSON.stringify(results, null, 1));
  const section = renderBoard(results);
  process.stdout.write(`\n${section}\n`);
  if (write) {
    writeBoardSection(resultsFile, section);
    log(`wrote the lock board section into ${resultsFile}`);
  }
}

/** `board-cost.js --from <raw.json>`: renders (and with BENCH_WRITE=1 stores) a previous run again. */
export function renderBoardFrom(file: string, write: boolean, resultsFile: string): void {
  const section = renderBoard(JSON.parse(readFileSync(file, 'utf8')) as BoardResults);
  process.stdout.write(`\n${section}\n`);
  if (write) writeBoardSection(resultsFile, section);
}

// Run directly (ts-node or node dist/bench/workloads/board-cost.js): pinned like the bench.
if (require.main === module) {
  const resultsFile = join(REPO, 'bench', 'RESULTS.md');
  const rawFile = join(REPO, 'dist', 'bench', 'last-board-run.json');
  const log = (line: string): void => void process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
  const from = process.argv.indexOf('--from');
  if (from !== -1) renderBoardFrom(process.argv[from + 1], process.env.BENCH_WRITE === '1', resultsFile);
  else {
    if (pinningAvailable()) spawnSync('taskset', ['-a', '-p', '-c', NODE_CORE, String(process.pid)], { stdio: 'ignore' });
    runBoardSection(process.env.BENCH_WRITE === '1', resultsFile, rawFile, log).then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
        process.exit(1);
      },
    );
  }
}
