/**
 * Cost per operation: what one locked call costs Redis and Node, per library and kind of lock.
 *
 * Each case x subject runs in a fresh worker process against the bench's own redis-server. After a
 * warm-up, the worker resets `INFO commandstats` (`CONFIG RESETSTAT`), runs the measured window
 * (sequential operations, or hand-offs), waits for the last release to land, and reads
 * `INFO commandstats`, redis-server's CPU (`INFO cpu`) and its own `process.cpuUsage()` delta. Then a
 * second, shorter window with the slow log recording every command gives the time per Lua script
 * (`EVALSHA` by SHA; this library's SHAs are named after their `lua/` file). Java Redisson's rows
 * run the same windows in a JVM instead of a worker (workloads/redisson-java-cost.ts).
 *
 * What is summed (Redis 7.0, checked by experiment: a script's `usec` includes the commands it runs,
 * and those are also counted under their own names):
 * - commands/op: the calls of every command, scripts and the commands they run included;
 * - Redis µs/op: the `usec` of the commands clients sent (scripts whole), never the inner commands'
 *   again. Which calls of a name were sent is known from this process's own count of what it sent
 *   (per command name); a name both sent and run inside scripts has its `usec` split by calls.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type Redis from 'ioredis';
import type { LockAdapter } from '../adapters/adapter';
import { redissonJavaSpec } from '../adapters/redisson-java';
import { REDISSON_4 } from '../../test/interop/redisson';
import { now, sleep } from '../harness/clock';
import { NODE_CORE, pinningAvailable, REDIS_CORE } from '../harness/cpu';
import { table } from '../harness/markdown';
import { CommandStat, commandStats, MEASURING, redisCpuMs, SentCommands } from '../harness/redis-meters';
import { adminClient, startBenchRedis } from '../harness/redis-server';
import { currentRevision, describeRevision } from '../harness/revision';
import { FULL, JOB_TIMEOUT_MS, QUICK } from '../harness/settings';
import { fmt, median } from '../harness/stats';
import { runJob } from '../harness/worker-process';
import type { WorkerContext } from './context';

/** The heading of this section of RESULTS.md; one `### Node <version>` subsection per Node major. */
export const COST_HEADING = '## Cost per operation';

export type CostCaseId = 'lock' | 'handoff' | 'fair' | 'read' | 'semaphore';

interface Subject {
  readonly id: string;
  readonly label: string;
  readonly ours: boolean;
  /** Shown in the per-script table (ours always): a peer whose scripts are worth naming. */
  readonly scripts?: boolean;
  /** In a worker process: the adapter the windows run. */
  create?(redisUrl: string): Promise<LockAdapter>;
  /** Outside Node (Java Redisson): runs the windows itself, from the bench's process. */
  measure?(redisUrl: string, params: CostParams, timeoutMs: number): Promise<CostRaw>;
  /** Why it cannot run here (no JVM, say), or undefined: such a subject is left out, not failed. */
  unavailable?(): string | undefined;
}

interface CostCase {
  readonly id: CostCaseId;
  readonly label: string;
  /** What one operation is. */
  readonly unit: string;
  readonly subjects: readonly Subject[];
}

/** A subject that is one of the bench's adapters (adapters/index.ts). */
function adapter(id: string, label: string, ours = false): Subject {
  return { id, label, ours, create: async (url) => (await import('../adapters')).adapterSpec(id).create(url) };
}

/** Java Redisson 4.x's `RLock`, in a JVM (workloads/redisson-java-cost.ts). */
function javaRedisson(op: 'lock' | 'trylock', id: string, label: string): Subject {
  return {
    id,
    label,
    ours: false,
    scripts: true,
    measure: async (url, params, timeoutMs) => (await import('./redisson-java-cost')).runJavaCost(op, url, params, timeoutMs),
    // The W1 adapter's check: a JVM, and the driver jar built (Maven, the first time).
    unavailable: () => redissonJavaSpec(REDISSON_4).unavailable(),
  };
}

function otherKind(kind: 'fair' | 'read' | 'semaphore', label: string): Subject {
  return { id: `ours-${kind}`, label, ours: true, create: async (url) => (await import('../adapters/nest-other-kinds')).createOtherKindAdapter(url, kind) };
}

export const COST_CASES: readonly CostCase[] = [
  {
    id: 'lock',
    label: 'uncontended locked call, distinct names',
    unit: 'acquire + release of a name never used before, one task, back to back',
    subjects: [
      adapter('ours-run', 'ours, LockService.run', true),
      adapter('ours-trylock', 'ours, tryLock + unlock', true),
      adapter('semaphore', 'redis-semaphore Mutex'),
      adapter('redlock-default', '@sesamecare-oss/redlock'),
      adapter('redlock-universal', 'redlock-universal'),
      adapter('node-redisson', 'node-redisson'),
      adapter('set-nx-poller', 'SET NX PX poller'),
      javaRedisson('lock', `redisson-java-${REDISSON_4}`, `Java Redisson ${REDISSON_4}, RLock lock() + unlock() (CPU: the whole JVM)`),
      javaRedisson('trylock', `redisson-java-${REDISSON_4}-trylock`, `Java Redisson ${REDISSON_4}, RLock tryLock(0 ms) + unlock() (CPU: the whole JVM)`),
    ],
  },
  {
    id: 'handoff',
    label: 'contended hand-off, 2 tasks in one process on one key',
    unit: 'one hand-off: the holder (1 ms hold) releases while the other task waits, which then takes it',
    subjects: [
      adapter('ours-run', 'ours, LockService.run', true),
      adapter('ours-trylock', 'ours, tryLock + unlock', true),
      adapter('semaphore', 'redis-semaphore Mutex (10 ms poll)'),
      adapter('redlock-10ms', '@sesamecare-oss/redlock (10 ms retry)'),
      adapter('node-redisson', 'node-redisson'),
      adapter('set-nx-poller', 'SET NX PX poller (10 ms)'),
    ],
  },
  {
    id: 'fair',
    label: 'fair lock call, distinct names',
    unit: 'acquire + release, one task, back to back (no peer has a fair lock)',
    subjects: [otherKind('fair', 'ours, FairLockService.run')],
  },
  {
    id: 'read',
    label: 'read lock call, distinct names',
    unit: 'read acquire + release, one task, back to back (no peer has a read-write lock)',
    subjects: [otherKind('read', 'ours, ReadWriteLockService.runRead')],
  },
  {
    id: 'semaphore',
    label: 'semaphore permit (3 permits), distinct names',
    unit: 'one permit taken and given back, one task, back to back',
    subjects: [
      otherKind('semaphore', 'ours, SemaphoreService.run'),
      {
        id: 'redis-semaphore',
        label: 'redis-semaphore Semaphore',
        ours: false,
        create: async (url) =>
          (await import('../adapters/redis-semaphore-semaphore')).createRedisSemaphoreSemaphoreAdapter(url, (await import('../adapters/nest-other-kinds')).COST_PERMITS),
      },
    ],
  },
];

export interface CostParams {
  /** Sequential cases: operations in the measured window, after `warmup`. */
  readonly ops: number;
  readonly warmup: number;
  /** Hand-off case: hand-offs in the window (or as many as `handoffCapMs` allows), after `handoffWarmup`. */
  readonly handoffs: number;
  readonly handoffWarmup: number;
  readonly handoffCapMs: number;
  /** The slow-log window for the per-script times: operations (hand-offs) it runs. */
  readonly luaOps: number;
  readonly luaHandoffs: number;
  /** JVM subjects: the JIT warm-up runs at least `warmup` operations, until no compilation for `jitQuietMs` (at most `jitMaxMs`), as W1's. */
  readonly jitQuietMs: number;
  readonly jitMaxMs: number;
}

export const COST_FULL: CostParams = {
  ops: 5000,
  warmup: 3000,
  handoffs: 500,
  handoffWarmup: 50,
  handoffCapMs: 6000,
  luaOps: 1000,
  luaHandoffs: 100,
  jitQuietMs: FULL.jvm.jitQuietMs,
  jitMaxMs: FULL.jvm.jitMaxMs,
};
export const COST_QUICK: CostParams = {
  ops: 500,
  warmup: 200,
  handoffs: 50,
  handoffWarmup: 10,
  handoffCapMs: 2000,
  luaOps: 200,
  luaHandoffs: 20,
  jitQuietMs: QUICK.jvm.jitQuietMs,
  jitMaxMs: QUICK.jvm.jitMaxMs,
};

/** One worker's figures (raw: the parent derives the per-operation ones). */
export interface CostRaw {
  readonly ops: number;
  readonly wallMs: number;
  readonly nodeCpuUs: number;
  readonly redisCpuUs: number;
  readonly giveUps: number;
  /** Commands this process sent (all its connections), per commandstats name. */
  readonly sent: Record<string, number>;
  readonly server: Record<string, CommandStat>;
  /** Slow-log window: per script (SHA), calls and total µs, over `luaOps` operations. */
  readonly lua: Record<string, { name: string; calls: number; usec: number }>;
  readonly luaOps: number;
  /** The measured window on the monotonic clock (µs), to cut a --cpu-prof profile to it. */
  readonly windowUs: [number, number];
}

/** This library's scripts by SHA, named after their `lua/` file. */
const scriptNames = (): Map<string, string> => {
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  const { LUA_SOURCES } = require('../../lib/redis/lua-sources.generated') as { LUA_SOURCES: Record<string, string> };
  return new Map(Object.entries(LUA_SOURCES).map(([name, source]) => [createHash('sha1').update(source).digest('hex'), name]));
};

const noop = async (): Promise<void> => undefined;

/**
 * A script's name from its SHA, its `EVALSHA`/`EVAL` arguments as the slow log has them, and the
 * commands it ran (their names, in order); undefined: not known.
 */
export type ScriptNamer = (sha: string, args: readonly string[], inner: readonly string[]) => string | undefined;

/**
 * Redis 7.0 logs the commands a script runs as from the client `?:0` (the scripts' fake client),
 * each right before the script's own entry.
 */
const SCRIPT_CLIENT = '?:0';

/**
 * The per-script window: `run` (resolving with the operations it ran) with the slow log recording
 * every command; its `EVALSHA`/`EVAL` entries grouped by SHA.
 */
export async function slowLogScripts(admin: Redis, run: () => Promise<number>, nameOf: ScriptNamer): Promise<{ ops: number; lua: CostRaw['lua'] }> {
  await admin.config('SET', 'slowlog-max-len', '200000');
  await admin.config('SET', 'slowlog-log-slower-than', '0');
  await admin.slowlog('RESET');
  const ops = await run();
  await sleep(50);
  await admin.config('SET', 'slowlog-log-slower-than', '10000');
  const entries = (await admin.slowlog('GET', '200000')) as Array<[number, number, number, string[], string, string]>;
  await admin.slowlog('RESET');
  const lua: CostRaw['lua'] = {};
  let inner: string[] = [];
  // Oldest first, so that a script's commands come before it.
  for (const [, , usec, args, client] of [...entries].reverse()) {
    const command = String(args[0]).toLowerCase();
    if (client === SCRIPT_CLIENT) {
      inner.push(command);
      continue;
    }
    const ran = inner;
    inner = [];
    if (command !== 'evalsha' && command !== 'eval') continue;
    const sha = command === 'evalsha' ? String(args[1]) : createHash('sha1').update(String(args[1])).digest('hex');
    const entry = (lua[sha] ??= { name: nameOf(sha, args.map(String), ran) ?? `${command === 'eval' ? 'EVAL ' : ''}${sha.slice(0, 10)} (not ours)`, calls: 0, usec: 0 });
    entry.calls += 1;
    entry.usec += Number(usec);
  }
  return { ops, lua };
}

/** `count` sequential operations on names never used before; resolves with the give-ups. */
async function sequential(adapter: LockAdapter, prefix: string, count: number): Promise<number> {
  let giveUps = 0;
  for (let i = 0; i < count; i++) {
    for (;;) {
      try {
        await adapter.run(`${prefix}:${i}`, noop);
        break;
      } catch (error) {
        if (!adapter.gaveUp(error)) throw error;
        giveUps += 1;
      }
    }
  }
  return giveUps;
}

/**
 * Two tasks take turns on one key: each, once it holds the lock, lets the other ask (which then
 * waits), holds 1 ms and releases; it asks again only once the other took the lock. So every
 * acquisition but the first is a hand-off with a waiter already waiting. Resolves with the hand-offs
 * done (at most `target`, fewer when `capMs` ran out) and the give-ups.
 */
async function handoffs(adapter: LockAdapter, key: string, target: number, capMs: number): Promise<{ handoffs: number; giveUps: number }> {
  let last = -1;
  let count = 0;
  let giveUps = 0;
  let done = false;
  const deadline = now() + capMs;
  const opens: Array<() => void> = [() => undefined, () => undefined];
  const gates: Array<Promise<void>> = [Promise.resolve(), new Promise<void>((resolve) => (opens[1] = resolve))];
  const newGate = (i: number): void => {
    gates[i] = new Promise<void>((resolve) => (opens[i] = resolve));
  };
  const task = async (i: number): Promise<void> => {
    for (;;) {
      await gates[i];
      if (done) return;
      try {
        await adapter.run(key, async () => {
          if (last !== -1 && last !== i) count += 1;
          last = i;
          if (count >= target || now() > deadline) done = true;
          newGate(i);
          opens[1 - i]();
          await sleep(1);
        });
      } catch (error) {
        // Gave up waiting: this task's gate is still open, it asks again.
        if (!adapter.gaveUp(error)) throw error;
        giveUps += 1;
      }
      if (done) {
        opens[1 - i]();
        return;
      }
    }
  };
  await Promise.all([task(0), task(1)]);
  return { handoffs: count, giveUps };
}

/** Worker side: one case x subject (`job.variant` = `case/subject`). */
export async function costChild(context: WorkerContext): Promise<CostRaw> {
  const [caseId, subjectId] = String(context.job.variant).split('/');
  const costCase = COST_CASES.find((c) => c.id === caseId);
  const subject = costCase?.subjects.find((s) => s.id === subjectId);
  if (!costCase || !subject?.create) throw new Error(`cost: unknown case/subject in a worker "${context.job.variant}"`);
  const params = context.job.params as unknown as CostParams;
  const sent = SentCommands.install();
  const admin = adminClient(context.job.redisUrl);
  const adapter = await subject.create(context.job.redisUrl);
  try {
    const handoff = costCase.id === 'handoff';
    const window = async (phase: string, size: number): Promise<{ ops: number; giveUps: number }> => {
      if (!handoff) return { ops: size, giveUps: await sequential(adapter, `cost:${phase}`, size) };
      const result = await handoffs(adapter, `cost:handoff:${phase}`, size, phase === 'measured' ? params.handoffCapMs : params.handoffCapMs / 3);
      return { ops: result.handoffs, giveUps: result.giveUps };
    };
    await window('warmup', handoff ? params.handoffWarmup : params.warmup);
    // `LockService.run` does not wait for its release: let the last one land before the reset.
    await sleep(50);
    await admin.config('RESETSTAT');
    const redisCpuBefore = await redisCpuMs(admin);
    sent.resetByName();
    const cpuBefore = process.cpuUsage();
    const started = now();
    const measured = await window('measured', handoff ? params.handoffs : params.ops);
    const wallMs = now() - started;
    const windowEnd = now();
    // The last release of `run` is still on its way; the pause costs no CPU.
    await sleep(50);
    const cpu = process.cpuUsage(cpuBefore);
    const sentByName = Object.fromEntries(sent.byName);
    const server = await commandStats(admin);
    const redisCpuUs = ((await redisCpuMs(admin)) - redisCpuBefore) * 1000;

    // The per-script window: the slow log records every command with its duration.
    const names = scriptNames();
    const luaWindow = await slowLogScripts(admin, async () => (await window('lua', handoff ? params.luaHandoffs : params.luaOps)).ops, (sha) => names.get(sha));
    return {
      ops: measured.ops,
      wallMs,
      nodeCpuUs: cpu.user + cpu.system,
      redisCpuUs,
      giveUps: measured.giveUps,
      sent: sentByName,
      server: Object.fromEntries([...server].filter(([name]) => !MEASURING.test(name))),
      lua: luaWindow.lua,
      luaOps: luaWindow.ops,
      windowUs: [Math.round(started * 1000), Math.round(windowEnd * 1000)],
    };
  } finally {
    await adapter.close().catch(() => undefined);
    admin.disconnect();
  }
}

/** Per-operation figures of one run. */
export interface CostFigures {
  readonly ops: number;
  readonly commandsPerOp: number;
  readonly sentPerOp: number;
  readonly redisUsPerOp: number;
  /** Every `usec` summed (scripts and their inner commands both): shown to say what not to quote. */
  readonly naiveUsPerOp: number;
  readonly redisCpuUsPerOp: number;
  readonly nodeCpuUsPerOp: number;
  readonly wallUsPerOp: number;
  readonly giveUps: number;
  readonly top: Array<[string, number]>;
  /**
   * Per script, from the slow-log window: calls per operation, µs per call there (inflated: Redis
   * logs each inner command while the script runs), and µs per operation scaled so that all
   * scripts together take what commandstats measured for them in the main window.
   */
  readonly lua: Array<{ name: string; callsPerOp: number; usPerCall: number; usPerOp: number }>;
}

const SCRIPT_COMMANDS = new Set(['evalsha', 'eval', 'evalsha_ro', 'eval_ro', 'fcall', 'fcall_ro']);

export function figures(raw: CostRaw): CostFigures {
  const ops = Math.max(1, raw.ops);
  let calls = 0;
  let usec = 0;
  let naive = 0;
  for (const [name, stat] of Object.entries(raw.server)) {
    calls += stat.calls;
    naive += stat.usec;
    // A script's usec includes its inner commands; a command run only inside scripts adds nothing.
    const sentShare = SCRIPT_COMMANDS.has(name) ? 1 : Math.min(1, (raw.sent[name] ?? 0) / Math.max(1, stat.calls));
    usec += stat.usec * sentShare;
  }
  const sent = Object.values(raw.sent).reduce((a, b) => a + b, 0);
  const top = Object.entries(raw.server)
    .map(([name, stat]): [string, number] => [name, stat.calls / ops])
    .sort((a, b) => b[1] - a[1]);
  const luaOps = Math.max(1, raw.luaOps);
  const scriptsUsPerOp = Object.entries(raw.server).reduce((total, [name, stat]) => total + (SCRIPT_COMMANDS.has(name) ? stat.usec : 0), 0) / ops;
  const slowLogUsPerOp = Object.values(raw.lua).reduce((total, script) => total + script.usec, 0) / luaOps;
  const scale = slowLogUsPerOp > 0 ? scriptsUsPerOp / slowLogUsPerOp : 1;
  const lua = Object.values(raw.lua)
    .map((s) => ({ name: s.name, callsPerOp: s.calls / luaOps, usPerCall: s.usec / Math.max(1, s.calls), usPerOp: (s.usec / luaOps) * scale }))
    .sort((a, b) => b.usPerOp - a.usPerOp);
  return {
    ops: raw.ops,
    commandsPerOp: calls / ops,
    sentPerOp: sent / ops,
    redisUsPerOp: usec / ops,
    naiveUsPerOp: naive / ops,
    redisCpuUsPerOp: raw.redisCpuUs / ops,
    nodeCpuUsPerOp: raw.nodeCpuUs / ops,
    wallUsPerOp: (raw.wallMs * 1000) / ops,
    giveUps: raw.giveUps,
    top,
    lua,
  };
}

/** Medians over repetitions of each number (the top list and scripts from the median-Redis-time run). */
function medianFigures(runs: readonly CostFigures[]): CostFigures {
  const pick = (f: (r: CostFigures) => number): number => median(runs.map(f));
  const redisUs = pick((r) => r.redisUsPerOp);
  const central = [...runs].sort((a, b) => Math.abs(a.redisUsPerOp - redisUs) - Math.abs(b.redisUsPerOp - redisUs))[0];
  return {
    ops: pick((r) => r.ops),
    commandsPerOp: pick((r) => r.commandsPerOp),
    sentPerOp: pick((r) => r.sentPerOp),
    redisUsPerOp: redisUs,
    naiveUsPerOp: pick((r) => r.naiveUsPerOp),
    redisCpuUsPerOp: pick((r) => r.redisCpuUsPerOp),
    nodeCpuUsPerOp: pick((r) => r.nodeCpuUsPerOp),
    wallUsPerOp: pick((r) => r.wallUsPerOp),
    giveUps: runs.reduce((a, r) => a + r.giveUps, 0),
    top: central.top,
    lua: central.lua,
  };
}

export interface CostResults {
  readonly node: string;
  readonly redis: string;
  readonly repetitions: number;
  readonly params: CostParams;
  readonly revision: string;
  readonly startedAt: string;
  readonly pinning: string;
  /** case -> subject -> per-repetition figures (an error message for a failed run). */
  readonly runs: Record<string, Record<string, Array<CostFigures | string>>>;
}

function chosenCases(): CostCase[] {
  const raw = process.env.BENCH_COST_CASES;
  if (!raw) return [...COST_CASES];
  const wanted = raw.split(',').map((s) => s.trim());
  return COST_CASES.filter((c) => wanted.includes(c.id));
}

/** Parent side: every case x subject, `repetitions` times in a rotating order, each in a fresh worker. */
export async function runCostBench(quick: boolean, log: (line: string) => void): Promise<CostResults> {
  const params = quick ? COST_QUICK : COST_FULL;
  const repsEnv = Number(process.env.BENCH_COST_REPS);
  const repetitions = Number.isInteger(repsEnv) && repsEnv > 0 ? repsEnv : quick ? 1 : 3;
  const adapters = process.env.BENCH_ADAPTERS?.split(',').map((s) => s.trim());
  const redis = await startBenchRedis();
  const admin = adminClient(redis.url);
  const runs: CostResults['runs'] = {};
  const jobs = chosenCases().flatMap((c) =>
    c.subjects
      .filter((s) => !adapters || adapters.includes(s.id))
      .filter((s) => {
        const why = s.unavailable?.();
        if (why) log(`cost ${c.id} ${s.id}: left out, ${why}`);
        return !why;
      })
      .map((s) => ({ caseId: c.id, subject: s })),
  );
  try {
    for (let rep = 1; rep <= repetitions; rep++) {
      for (let i = 0; i < jobs.length; i++) {
        const { caseId, subject } = jobs[(i + rep - 1) % jobs.length];
        await admin.flushall();
        const started = Date.now();
        const list = ((runs[caseId] ??= {})[subject.id] ??= []);
        try {
          const raw = subject.measure
            ? await subject.measure(redis.url, params, JOB_TIMEOUT_MS)
            : await runJob<CostRaw>({ task: 'cost', variant: `${caseId}/${subject.id}`, redisUrl: redis.url, params: params as unknown as Record<string, number> }, JOB_TIMEOUT_MS);
          const f = figures(raw);
          list.push(f);
          log(`cost rep ${rep} ${caseId} ${subject.id}: ${((Date.now() - started) / 1000).toFixed(1)} s, ${fmt(f.commandsPerOp)} cmds/op, Redis ${fmt(f.redisUsPerOp)} us/op, Node ${fmt(f.nodeCpuUsPerOp)} us/op`);
        } catch (error) {
          const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
          list.push(message);
          log(`cost rep ${rep} ${caseId} ${subject.id}: FAILED ${message}`);
        }
      }
    }
  } finally {
    admin.disconnect();
    await redis.stop();
  }
  return {
    node: process.version,
    redis: redis.version,
    repetitions,
    params,
    revision: describeRevision(currentRevision()),
    startedAt: new Date().toISOString(),
    pinning: pinningAvailable() ? `redis-server on core ${REDIS_CORE}, every Node process on core ${NODE_CORE} (taskset)` : 'not pinned',
    runs,
  };
}

const topList = (top: Array<[string, number]>, n = 12): string =>
  top
    .slice(0, n)
    .map(([name, perOp]) => `${name.toUpperCase()} ${fmt(perOp, 2)}`)
    .join(', ');

/** The first row's figure over this row's: "ours costs N times this library". */
const ratio = (value: number, reference: number | undefined): string => (reference && value > 0 ? `${fmt(reference / value, 2)}x` : '');

/** "median (min-max)" over the runs, or the median alone for one run. */
function spread(runs: readonly CostFigures[], pick: (f: CostFigures) => number): string {
  const values = runs.map(pick);
  const m = fmt(median(values));
  return values.length > 1 ? `${m} (${fmt(Math.min(...values))}-${fmt(Math.max(...values))})` : m;
}

/** The `### Node <version>` subsection of one run. */
export function renderCost(results: CostResults): string {
  const lines: string[] = [
    `### Node ${results.node}`,
    '',
    `Redis ${results.redis}, ${results.pinning}; measured at ${results.revision}, ${results.startedAt}. ` +
      `Medians of ${results.repetitions} run(s), each a fresh worker process: sequential cases ${results.params.ops.toLocaleString('en')} operations after ` +
      `${results.params.warmup.toLocaleString('en')} of warm-up; hand-offs ${results.params.handoffs} (or as many as ${results.params.handoffCapMs / 1000} s allow) after ${results.params.handoffWarmup}.`,
    '',
  ];
  for (const costCase of COST_CASES) {
    const subjects = results.runs[costCase.id];
    if (!subjects) continue;
    const medians = new Map<string, CostFigures | string>();
    const okRuns = new Map<string, CostFigures[]>();
    for (const subject of costCase.subjects) {
      const list = subjects[subject.id];
      if (!list) continue;
      const ok = list.filter((r): r is CostFigures => typeof r !== 'string');
      okRuns.set(subject.id, ok);
      medians.set(subject.id, ok.length ? medianFigures(ok) : String(list[0]));
    }
    const reference = [...medians.values()].find((m): m is CostFigures => typeof m !== 'string');
    const rows = costCase.subjects
      .filter((s) => medians.has(s.id))
      .map((s) => {
        const m = medians.get(s.id)!;
        const label = s.ours ? `**${s.label}**` : s.label;
        if (typeof m === 'string') return [label, `failed: ${m}`, '', '', '', '', '', '', '', '', ''];
        return [
          label,
          fmt(m.commandsPerOp, 3),
          fmt(m.sentPerOp, 3),
          spread(okRuns.get(s.id)!, (f) => f.redisUsPerOp),
          fmt(m.naiveUsPerOp - m.redisUsPerOp),
          fmt(m.redisCpuUsPerOp),
          spread(okRuns.get(s.id)!, (f) => f.nodeCpuUsPerOp),
          fmt(m.wallUsPerOp),
          m === reference ? '' : `${ratio(m.redisUsPerOp, reference?.redisUsPerOp)} / ${ratio(m.nodeCpuUsPerOp, reference?.nodeCpuUsPerOp)}`,
          costCase.id === 'handoff' ? `${fmt(m.ops)}${m.giveUps ? `, ${m.giveUps} give-ups` : ''}` : fmt(m.ops),
          topList(m.top),
        ];
      });
    lines.push(
      `#### ${costCase.label}`,
      '',
      `One operation: ${costCase.unit}.`,
      '',
      table(
        ['library', 'commands/op (all)', 'sent/op', 'Redis µs/op (min-max)', 'of which scripts\' inner commands', 'redis-server CPU µs/op', 'client CPU µs/op (min-max)', 'wall µs/op', 'first row ÷ this row: Redis / client µs', costCase.id === 'handoff' ? 'hand-offs' : 'ops', 'commands by calls/op'],
        rows,
      ),
      '',
    );
    const luaRows: string[][] = [];
    for (const s of costCase.subjects) {
      const m = medians.get(s.id);
      if (!(s.ours || s.scripts) || !m || typeof m === 'string') continue;
      for (const script of m.lua) luaRows.push([s.label, `\`${script.name}\``, fmt(script.callsPerOp, 3), fmt(script.usPerCall), fmt(script.usPerOp)]);
    }
    if (luaRows.length) {
      lines.push(
        'Per script, this library and Java Redisson (a slow-log window after the measured one: its µs/call are inflated by the logging of each inner command; ' +
          'µs/op is scaled so the scripts add up to what commandstats measured for them in the window above):',
        '',
        table(['library', 'script (lua/, or Redisson\'s by its keys)', 'calls/op', 'µs/call (slow log)', 'µs/op (scaled)'], luaRows, 2),
        '',
      );
    }
  }
  return lines.join('\n');
}

const INTRO = [
  COST_HEADING,
  '',
  'Written by `BENCH_WORKLOADS=cost` (bench/workloads/cost.ts); bench/README.md says how. Per operation, in a fresh worker',
  'process against the bench\'s own redis-server: **commands/op** is every call in `INFO commandstats` (reset with',
  '`CONFIG RESETSTAT` right before the window), `EVALSHA` and the commands scripts run both counted; **sent/op** the commands',
  'the process sent (its round-trip commands); **Redis µs/op** the `usec` of the commands sent, scripts whole (on Redis 7.0 a',
  "script's `usec` already includes its inner commands', which are not added again; the next column is that inner part, the",
  'rest of a script\'s time is Lua itself and calling it); **redis-server CPU µs/op** its',
  '`used_cpu_user + used_cpu_sys` (INFO cpu) over the window, reading and writing the sockets included; **client CPU µs/op**',
  '`process.cpuUsage()` (user + system) of the worker over the window. Per script: a second window with',
  '`slowlog-log-slower-than 0`, `EVALSHA` entries grouped by SHA, named after their `lua/` file. The Node profile of the',
  'fast path: bench/profiles/README.md. Java Redisson\'s rows run the same windows in a JVM (after a JIT warm-up): client CPU',
  'is the whole JVM\'s (Netty and JIT threads included), sent/op is counted by `MONITOR` in a third window (a script\'s',
  'commands have the source `lua`), and its scripts are named by their keys (the one given the lock\'s channel unlocks).',
  '',
].join('\n');

/** The section with this run's subsection in place of the previous one of the same Node major. */
export function mergeCostSection(previousSection: string, subsection: string): string {
  const major = /^### Node v(\d+)\./.exec(subsection)?.[1];
  const kept: string[] = [];
  const parts = previousSection.split(/\n(?=### Node v)/).slice(1);
  for (const part of parts) {
    if (/^### Node v(\d+)\./.exec(part)?.[1] !== major) kept.push(part.trimEnd());
  }
  const all = [...kept, subsection.trimEnd()].sort((a, b) => Number(/v(\d+)/.exec(a)?.[1]) - Number(/v(\d+)/.exec(b)?.[1]));
  return `${INTRO}\n${all.join('\n\n')}\n`;
}

/** Where a `## ` section starting at `start` ends. */
function sectionEnd(text: string, start: number): number {
  const next = text.indexOf('\n## ', start + 1);
  return next >= 0 ? next + 1 : text.length;
}

/** The cost section of RESULTS.md, for a full run's rewrite to keep (empty string when none). */
export function keptCostSection(previous: string): string {
  const start = previous.indexOf(COST_HEADING);
  return start >= 0 ? `\n${previous.slice(start, sectionEnd(previous, start)).trimEnd()}\n` : '';
}

/** Puts the section in place of its previous version, else before the memory and W6 sections. */
export function writeCostSection(file: string, subsection: string): void {
  const previous = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmark results\n';
  const start = previous.indexOf(COST_HEADING);
  if (start >= 0) {
    const end = sectionEnd(previous, start);
    const section = mergeCostSection(previous.slice(start, end), subsection);
    writeFileSync(file, `${previous.slice(0, start)}${section}${end < previous.length ? '\n' : ''}${previous.slice(end)}`);
    return;
  }
  const later = ['## Memory per lock name', '## W6'].map((h) => previous.indexOf(h)).filter((i) => i >= 0);
  const at = later.length ? Math.min(...later) : previous.length;
  const section = mergeCostSection('', subsection);
  writeFileSync(file, `${previous.slice(0, at).trimEnd()}\n\n${section}${at < previous.length ? '\n' : ''}${previous.slice(at)}`);
}

/** `run.js --cost-from <last-cost-run.json>`: renders (and with `write` stores) a previous run again. */
export function renderCostFrom(file: string, write: boolean, resultsFile: string): void {
  const subsection = renderCost(JSON.parse(readFileSync(file, 'utf8')) as CostResults);
  process.stdout.write(`\n${subsection}\n`);
  if (write) writeCostSection(resultsFile, subsection);
}

/** `BENCH_WORKLOADS=cost`: runs, prints, and with `write` stores the section; raw figures beside last-run.json. */
export async function runCostSection(write: boolean, resultsFile: string, rawFile: string, log: (line: string) => void): Promise<void> {
  const results = await runCostBench(process.env.BENCH_QUICK === '1', log);
  writeFileSync(rawFile, JSON.stringify(results, null, 1));
  const subsection = renderCost(results);
  process.stdout.write(`\n${subsection}\n`);
  if (write) {
    writeCostSection(resultsFile, subsection);
    log(`wrote the cost section (Node ${results.node}) into ${resultsFile}`);
  }
}
