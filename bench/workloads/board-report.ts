/**
 * The lock board workload's report (workloads/board-cost.ts measures): per-run summaries, the
 * markdown section of bench/RESULTS.md, and putting it in place there.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { table } from '../harness/markdown';
import { fmt, median, percentile } from '../harness/stats';
import { BOARD_HEADING, budgetLabel, GAP_MS, REPLAYED_SCRIPTS_PER_REFRESH, type BoardResults, type BoardRun, type RefreshSample } from './board-shared';

// ---------------------------------------------------------------------------------------------
// Summaries and the report

export interface BoardSummary {
  readonly refreshes: number;
  readonly allNew: boolean;
  readonly redisMsP50: number;
  readonly redisMsMax: number;
  readonly redisCpuMsP50: number;
  readonly sentP50: number;
  readonly runP50: number;
  readonly scanCallsP50: number;
  readonly scanMsP50: number;
  readonly evalCallsP50: number;
  readonly evalMsP50: number;
  readonly otherCalls: string;
  /** Share of Redis's time the board takes while a page is open, at refreshMs 250 and 2,000. */
  readonly busy250: number;
  readonly busy2000: number;
  /** Phase 2 (live, slow log): the longest command the board sent, µs, and its name; p99 of all. */
  readonly longestUs: number;
  readonly longestName: string;
  readonly p99Us: number;
  /** Phase 2: times redis-server was preempted during a refresh, p50. */
  readonly preemptionsP50: number;
  /** Phase 1: INFO latencystats p100 (µs) of the commands the board sends, the highest. */
  readonly latencyMaxUs: number;
  readonly latencyMaxName: string;
  /** Phase 1: commands over 5 ms, any client. */
  readonly slowCount: number;
  readonly slowMaxUs: number;
  readonly livePerScanUs: Stat;
  readonly livePerInspectUs: Stat;
  /** Replayed alone, not preempted. */
  readonly alonePerScanUs: Stat;
  readonly alonePerInspectUs: Stat;
  readonly keysScannedMax: number;
  readonly keysScannedP50: number;
  readonly scanVisitedMax: number;
  readonly overBudget: number;
  readonly namesFull: boolean;
  readonly passRefreshes: number | undefined;
  readonly passText: string;
  readonly completeShare: number;
  readonly locksShown: number;
  readonly locksFound: number;
  readonly wallP50: number;
  readonly wallMax: number;
  readonly nodeCpuP50: number;
  readonly loopDelayP50: number;
  readonly loopDelayMax: number;
  readonly responseKb: number;
  readonly heapGrowthMb: number;
  /** From the 10th measured refresh to the end of phase 1: what more refreshes added (about 0: a plateau). */
  readonly heapLateGrowthMb: number;
  readonly heapAfterMb: number;
}

interface Stat {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

function stat(values: readonly number[]): Stat {
  return { n: values.length, p50: median(values), p99: percentile(values, 99), max: values.length ? Math.max(...values) : Number.NaN };
}

const statText = (st: Stat): string => `${fmt(st.p50)} / ${fmt(st.p99)} / ${fmt(st.max)}`;

export function summarize(run: BoardRun): BoardSummary {
  const stats = run.samples.filter((s) => s.phase === 'stats');
  const logged = run.samples.filter((s) => s.phase === 'slowlog');
  const counted = [...stats, ...logged];
  const pick = (list: readonly RefreshSample[], f: (s: RefreshSample) => number): number => median(list.map(f));
  const calls = (s: RefreshSample, name: string): number => s.sent[name] ?? 0;
  const usOf = (s: RefreshSample, name: string): number => {
    const st = s.server[name];
    return st ? st.usec * Math.min(1, calls(s, name) / st.calls) : 0;
  };
  const own = logged.flatMap((s) => s.slow);
  const longest = own.reduce<(typeof own)[number] | undefined>((best, e) => (!best || e.us > best.us ? e : best), undefined);
  const alone = logged.flatMap((s) => s.alone ?? []);
  const boardNames = new Set(stats.flatMap((s) => Object.keys(s.sent)));
  let latencyMaxUs = 0;
  let latencyMaxName = '';
  for (const [name, l] of Object.entries(run.latency)) {
    if (boardNames.has(name) && l.p100 > latencyMaxUs) {
      latencyMaxUs = l.p100;
      latencyMaxName = name;
    }
  }
  const slowEntries = stats.flatMap((s) => s.slow);
  // Refreshes from the walk's first (the warm-up) until the next pass began, minus that one.
  const starts = run.samples.map((s, i) => (s.passStarted ? i : -1)).filter((i) => i >= 0);
  const passRefreshes = starts.length >= 2 ? starts[1] - starts[0] : undefined;
  const completeShare = counted.filter((s) => s.complete).length / Math.max(1, counted.length);
  const wallP50 = pick(stats, (s) => s.wallMs);
  const redisMsP50 = pick(stats, (s) => s.redisUs) / 1000;
  const passText =
    completeShare === 1
      ? 'every refresh (exact view)'
      : passRefreshes === undefined
        ? `not within ${run.samples.length} refreshes`
        : // The page asks again `refreshMs` after each answer.
          `${passRefreshes} refreshes (${fmt((passRefreshes * (GAP_MS + wallP50)) / 1000, 2)} s here; ${fmt((passRefreshes * (2_000 + wallP50)) / 1000, 2)} s at refreshMs 2,000)`;
  const last = run.samples[run.samples.length - 1];
  const others = new Map<string, number>();
  for (const s of stats) for (const [name, n] of Object.entries(s.sent)) if (name !== 'scan' && name !== 'evalsha') others.set(name, (others.get(name) ?? 0) + n);
  const preemptions = logged.map((s) => s.preemptions).filter((n): n is number => n !== undefined);
  return {
    refreshes: stats.length,
    allNew: counted.every((s) => s.newRefresh),
    redisMsP50,
    redisMsMax: Math.max(...stats.map((s) => s.redisUs)) / 1000,
    redisCpuMsP50: pick(stats, (s) => s.redisCpuMs),
    sentP50: pick(stats, (s) => Object.values(s.sent).reduce((a, b) => a + b, 0)),
    runP50: pick(stats, (s) => s.commandsRun),
    scanCallsP50: pick(stats, (s) => calls(s, 'scan')),
    scanMsP50: pick(stats, (s) => usOf(s, 'scan')) / 1000,
    evalCallsP50: pick(stats, (s) => calls(s, 'evalsha')),
    evalMsP50: pick(stats, (s) => usOf(s, 'evalsha')) / 1000,
    // Rare commands (an instance heartbeat that fell into a window) left out.
    otherCalls: [...others]
      .filter(([, n]) => n / Math.max(1, stats.length) >= 0.5)
      .map(([name, n]) => `${name.toUpperCase()} ${fmt(n / Math.max(1, stats.length), 2)}`)
      .join(', '),
    // The next refresh may start `refreshMs` after the last one ended (one in flight at a time).
    busy250: redisMsP50 / (wallP50 + 250),
    busy2000: redisMsP50 / (wallP50 + 2_000),
    longestUs: longest?.us ?? Number.NaN,
    longestName: longest?.name ?? '',
    p99Us: percentile(own.map((e) => e.us), 99),
    preemptionsP50: median(preemptions),
    latencyMaxUs,
    latencyMaxName,
    slowCount: slowEntries.length,
    slowMaxUs: slowEntries.length ? Math.max(...slowEntries.map((e) => e.us)) : 0,
    livePerScanUs: stat(own.filter((e) => e.name === 'scan').map((e) => e.us)),
    livePerInspectUs: stat(own.filter((e) => e.name === 'evalsha').map((e) => e.us)),
    alonePerScanUs: stat(alone.filter((e) => e.name === 'scan').map((e) => e.us)),
    alonePerInspectUs: stat(alone.filter((e) => e.name === 'evalsha').map((e) => e.us)),
    keysScannedMax: Math.max(...run.samples.map((s) => s.keysScanned)),
    keysScannedP50: pick(counted, (s) => s.keysScanned),
    scanVisitedMax: Math.max(...logged.map((s) => s.scanVisited ?? 0)),
    // SCAN returns whole hash buckets, so a call may visit a few keys over its COUNT: 1% is allowed for.
    overBudget: run.samples.filter((s) => s.keysScanned > run.budget.keysPerRefresh || (s.scanVisited ?? 0) > run.budget.keysPerRefresh * 1.01).length,
    namesFull: run.samples.some((s) => s.namesFull),
    passRefreshes,
    passText,
    completeShare,
    locksShown: last.locksShown,
    locksFound: last.locksFound,
    wallP50,
    wallMax: Math.max(...stats.map((s) => s.wallMs)),
    nodeCpuP50: pick(stats, (s) => s.nodeCpuMs),
    loopDelayP50: pick(stats, (s) => s.loopDelayMaxMs),
    loopDelayMax: Math.max(...stats.map((s) => s.loopDelayMaxMs)),
    responseKb: last.responseBytes / 1024,
    heapGrowthMb: (run.heapMid - run.heapBefore) / 2 ** 20,
    heapLateGrowthMb: (run.heapMid - run.heapAt10) / 2 ** 20,
    heapAfterMb: run.heapAfter / 2 ** 20,
  };
}

const keysText = (n: number): string => (n >= 1_000_000 ? `${fmt(n / 1_000_000, 3)}M` : n.toLocaleString('en-US'));
const percent = (share: number): string => `${fmt(share * 100, 2)}%`;

/** The `## Lock board: cost per refresh` section. */
export function renderBoard(results: BoardResults): string {
  const rows = results.runs.map((run) => ({ run, s: summarize(run) }));
  const label = (run: BoardRun): string => `${run.scenario}: ${run.label}`;
  const n = results.slowlogRefreshes;
  const redisTable = table(
    [
      'scenario',
      'budget (keys / locks per refresh)',
      'keys in Redis',
      'refreshes',
      'Redis ms/refresh p50 (max)',
      'SCAN: calls, ms',
      'inspect scripts: calls, ms',
      'other commands/refresh',
      'redis-server CPU ms/refresh (socket I/O included)',
      'commands sent (run, script internals included)',
      'Redis busy with a page open, refreshMs 250 / 2,000',
    ],
    rows.map(({ run, s }) => [
      label(run),
      budgetLabel(run.budget),
      keysText(run.keysInRedis),
      String(s.refreshes),
      `${fmt(s.redisMsP50)} (${fmt(s.redisMsMax)})`,
      `${fmt(s.scanCallsP50)}, ${fmt(s.scanMsP50)}`,
      `${fmt(s.evalCallsP50)}, ${fmt(s.evalMsP50)}`,
      s.otherCalls,
      fmt(s.redisCpuMsP50),
      `${fmt(s.sentP50)} (${fmt(s.runP50)})`,
      `${percent(s.busy250)} / ${percent(s.busy2000)}`,
    ]),
    3,
  );
  const longestTable = table(
    [
      'scenario',
      'budget',
      `replayed alone, not preempted: SCAN µs p50 / p99 / max`,
      'inspect EVALSHA µs p50 / p99 / max',
      `live (slow log, ${n} refreshes): longest µs`,
      'live p99 µs',
      'live: SCAN µs p50 / p99 / max',
      'live: EVALSHA µs p50 / p99 / max',
      'Redis preempted per refresh (p50)',
      'measured refreshes: latencystats p100 µs',
      'commands > 5 ms (any client)',
    ],
    rows.map(({ run, s }) => [
      label(run),
      budgetLabel(run.budget),
      `${statText(s.alonePerScanUs)} (${s.alonePerScanUs.n})`,
      `${statText(s.alonePerInspectUs)} (${s.alonePerInspectUs.n})`,
      `${fmt(s.longestUs)} ${s.longestName.toUpperCase()}`,
      fmt(s.p99Us),
      statText(s.livePerScanUs),
      statText(s.livePerInspectUs),
      fmt(s.preemptionsP50),
      `${fmt(s.latencyMaxUs)} ${s.latencyMaxName.toUpperCase()}`,
      s.slowCount === 0 ? '0' : `${s.slowCount} (max ${fmt(s.slowMaxUs)} µs)`,
    ]),
    2,
  );
  const walkTable = table(
    [
      'scenario',
      'budget (keys / locks per refresh)',
      'keys scanned/refresh p50 (max)',
      'keys SCAN visited/refresh, max (replayed)',
      'a full pass takes',
      'locks shown / found (last refresh)',
      'wall ms/refresh p50 (max)',
      'Node CPU ms/refresh',
      'event loop blocked, ms: p50 of the longest per refresh (max)',
      'snapshot KB',
      'heap growth MB (of which after the 10th refresh)',
    ],
    rows.map(({ run, s }) => [
      label(run),
      budgetLabel(run.budget),
      `${fmt(s.keysScannedP50)} (${fmt(s.keysScannedMax)})`,
      s.scanVisitedMax.toLocaleString('en-US'),
      s.passText,
      `${s.locksShown.toLocaleString('en-US')} / ${s.locksFound.toLocaleString('en-US')}${s.namesFull ? ' (names full)' : ''}`,
      `${fmt(s.wallP50)} (${fmt(s.wallMax)})`,
      fmt(s.nodeCpuP50),
      `${fmt(s.loopDelayP50)} (${fmt(s.loopDelayMax)})`,
      fmt(s.responseKb),
      `${fmt(s.heapGrowthMb)} (${fmt(s.heapLateGrowthMb, 2)})`,
    ]),
    2,
  );
  const notNew = rows.filter(({ s }) => !s.allNew).map(({ run }) => `${run.scenario} ${budgetLabel(run.budget)}`);
  const overBudget = rows.filter(({ s }) => s.overBudget > 0).map(({ run, s }) => `${run.scenario} ${budgetLabel(run.budget)}: ${s.overBudget} refreshes`);
  return [
    BOARD_HEADING,
    '',
    `Written by \`BENCH_WORKLOADS=board\` (bench/workloads/board-cost.ts); bench/README.md says how. Run of ${results.date}: ` +
      `${results.cores} cores (${results.cpu}, shared with other work), Redis ${results.redis}, Node ${results.node}; ${results.pinning}; measured at ${results.revision}; lib/board/*.ts sha1 ${results.boardSources}.` +
      (results.quick ? ' **Quick run (BENCH_QUICK=1): a tenth of the keys and locks.**' : ''),
    '',
    'Each refresh is one `GET /lock-board/api/snapshot` of a board app (LockModule + `LockBoardModule.forRoot({ guard: false, refreshMs: 250, budget })`,',
    'a fresh one per row: a fresh walk), 280 ms after the previous answer, so every request is a new refresh. The locks are real: a',
    'holder app in a process of its own took them with `tryLock({ leaseTime: 1 h })`; the unrelated keys are `other:<n>` strings (MSET, as `DEBUG POPULATE`',
    'writes them). The first refresh is a warm-up; then at least 20, until the walk began its second pass (at most 150), are',
    `measured with INFO before and after each request, then ${n} more with \`slowlog-log-slower-than 0\`.`,
    '',
    '- **Redis ms/refresh**: the `usec` (INFO commandstats) of the commands the board sent, scripts whole (a script\'s `usec`',
    "  includes its inner commands'). **redis-server CPU**: its `used_cpu_user + used_cpu_sys` over the request, reading and",
    '  answering the sockets included. **Redis busy with a page open**: Redis ms over (wall ms + refreshMs): one refresh is in',
    '  flight at a time and the next may start `refreshMs` after it ended.',
    '- **Longest commands.** Redis times a command on the wall clock, so one whose thread another process on this shared machine',
    "  preempted looks longer than Redis's work on it. **Replayed alone**: after each slow-log refresh, every SCAN the board sent",
    `  and up to ${REPLAYED_SCRIPTS_PER_REFRESH} of its EVALSHAs are sent again one at a time with the same arguments, and kept when redis-server's`,
    '  thread had no involuntary context switch meanwhile (/proc/<pid>/task/<pid>/status; count in brackets): Redis\'s own work on',
    "  each. **Live**: the board's own commands in the slow log (the logging inflates scripts a little; preemptions included).",
    '  **latencystats p100**: `INFO latencystats` over the measured refreshes. **commands > 5 ms**: the slow log at 5 ms over them.',
    "- **keys SCAN visited**: the board's SCANs of the slow-log refreshes replayed from the same cursors with the same COUNT and no",
    '  MATCH/TYPE. **a full pass takes**: refreshes from the walk\'s first `SCAN 0` to its next. **event loop blocked**: the Node',
    '  process\'s longest event-loop delay per request (`monitorEventLoopDelay`; board app and HTTP client in one process).',
    '  **heap growth**: `heapUsed` after a full GC at the end of the measured refreshes minus before the first (what the walk',
    '  remembers and the last reading it keeps); in brackets, the part added after the 10th (about 0: it stopped growing).',
    '',
    '### Redis time per refresh',
    '',
    redisTable,
    '',
    '### Longest commands',
    '',
    longestTable,
    '',
    '### The walk and the app',
    '',
    walkTable,
    '',
    notNew.length ? `Warning: a request found the previous reading (not a new refresh) in: ${notNew.join('; ')}.\n` : '',
    overBudget.length
      ? `**Over budget** (more than 1% over, by the walk's count or the replay): ${overBudget.join('; ')}.\n`
      : "No refresh scanned more keys than its budget by the walk's count; by the replay, SCAN visits whole hash buckets, so a call may visit a few keys over its COUNT (never more than 1% here).\n",
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// RESULTS.md

/** Where a `## ` section starting at `start` ends. */
function sectionEnd(text: string, start: number): number {
  const next = text.indexOf('\n## ', start + 1);
  return next >= 0 ? next + 1 : text.length;
}

/** The board section of RESULTS.md, for a full run's rewrite to keep (empty string when none). */
export function keptBoardSection(previous: string): string {
  const start = previous.indexOf(BOARD_HEADING);
  return start >= 0 ? `\n${previous.slice(start, sectionEnd(previous, start)).trimEnd()}\n` : '';
}

/** Puts the section in place of its previous version, else before the memory and W6 sections. */
export function writeBoardSection(file: string, section: string): void {
  const previous = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmark results\n';
  const start = previous.indexOf(BOARD_HEADING);
  if (start >= 0) {
    const end = sectionEnd(previous, start);
    writeFileSync(file, `${previous.slice(0, start)}${section.trimEnd()}\n${end < previous.length ? '\n' : ''}${previous.slice(end)}`);
    return;
  }
  const later = ['## Memory per lock name', '## W6'].map((h) => previous.indexOf(h)).filter((i) => i >= 0);
  const at = later.length ? Math.min(...later) : previous.length;
  writeFileSync(file, `${previous.slice(0, at).trimEnd()}\n\n${section.trimEnd()}\n${at < previous.length ? '\n' : ''}${previous.slice(at)}`);
}
