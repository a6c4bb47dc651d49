/** What the lock board workload (board-cost.ts) and its report (board-report.ts) share: the section's heading, the pacing, the shapes of a run. */
import type { LockBoardBudget } from '../../lib/board';

/** The heading of this section of RESULTS.md (replaced when it runs again, kept by full runs). */
export const BOARD_HEADING = '## Lock board: cost per refresh';

/** The board app's `refreshMs` in the bench. */
export const REFRESH_MS = 250;

/** The board's default budget (lib/board/lock-board.options.ts). */
export const DEFAULT_BUDGET = { keysPerRefresh: 20_000, locksPerRefresh: 1_000 };

/** One keyspace the workload measures, at each budget. */
export interface Scenario {
  readonly id: 'A' | 'B' | 'C' | 'D';
  readonly label: string;
  readonly locks: number;
  readonly otherKeys: number;
  readonly budgets: readonly LockBoardBudget[];
}

/** After each answer, before the next request: over `refreshMs`, so every request is a new refresh. */
export const GAP_MS = REFRESH_MS + 30;

export interface CommandStat {
  calls: number;
  usec: number;
}

/** One refresh as measured. */
export interface RefreshSample {
  readonly phase: 'warm-up' | 'stats' | 'slowlog';
  readonly wallMs: number;
  readonly nodeCpuMs: number;
  readonly redisCpuMs: number;
  readonly responseBytes: number;
  /** Commands the board's connection sent, by commandstats name. */
  readonly sent: Record<string, number>;
  /** Calls and µs by command over the request (phase 1; the bench's INFO/CONFIG/SLOWLOG left out). */
  readonly server: Record<string, CommandStat>;
  /** Redis µs of the commands the board sent, scripts whole. */
  readonly redisUs: number;
  /** Every call Redis ran in the window, script internals included. */
  readonly commandsRun: number;
  readonly keysScanned: number;
  readonly complete: boolean;
  readonly locksShown: number;
  readonly locksFound: number;
  readonly message: string | undefined;
  readonly newRefresh: boolean;
  /**
   * Times redis-server's main thread was preempted during the request (its involuntary context
   * switches, /proc/<pid>/task/<pid>/status): the slow log and commandstats time commands on the
   * wall clock, so a command preempted by another process on the machine looks longer than Redis's
   * work on it.
   */
  readonly preemptions: number | undefined;
  /** The longest the Node event loop (board app and HTTP client, one process) was blocked, ms. */
  readonly loopDelayMaxMs: number;
  /**
   * Phase 2: the board's SCANs and a sample of its EVALSHAs, each replayed alone with the same
   * arguments on the bench's connection, kept when redis-server was not preempted meanwhile: µs.
   */
  readonly alone?: ReadonlyArray<{ name: string; us: number }>;
  /** Phase 1: commands of 1 ms or more (any client); phase 2: every command the board sent. */
  readonly slow: ReadonlyArray<{ name: string; us: number; client: string }>;
  /** Phase 2: keys SCAN visited (its calls replayed without MATCH/TYPE). */
  readonly scanVisited?: number;
  readonly scanCalls?: number;
  /** The walk sent `SCAN 0 ...` in this refresh: a pass began (seen in what the board's connection sent). */
  readonly passStarted: boolean;
  /** The page said the walk stopped remembering names (MAX_KNOWN_NAMES). */
  readonly namesFull: boolean;
}

export interface BoardRun {
  readonly scenario: Scenario['id'];
  readonly label: string;
  readonly budget: { keysPerRefresh: number; locksPerRefresh: number };
  readonly keysInRedis: number;
  readonly locks: number;
  readonly samples: RefreshSample[];
  /** Phase 1, per command: p50/p99/p100 µs from INFO latencystats. */
  readonly latency: Record<string, { p50: number; p99: number; p100: number }>;
  /**
   * `heapUsed` after a full GC: before the first refresh, after the 10th measured one, at the end
   * of phase 1 (what the walk remembers and the reading it keeps; the bench's own records of phase 1
   * are small), and after phase 2 (which also holds the bench's slow-log records, MBs for 10,000
   * inspections: not the board's).
   */
  readonly heapBefore: number;
  readonly heapAt10: number;
  readonly heapMid: number;
  readonly heapAfter: number;
  readonly setupMs: number;
}

export interface BoardResults {
  readonly date: string;
  readonly node: string;
  readonly redis: string;
  readonly cpu: string;
  readonly cores: number;
  readonly pinning: string;
  readonly revision: string;
  /** sha1 (12 digits) of lib/board/*.ts (the generated page left out) and its newest file's time: the board measured. */
  readonly boardSources: string;
  readonly quick: boolean;
  readonly slowlogRefreshes: number;
  readonly runs: BoardRun[];
}

/** EVALSHAs of one refresh replayed alone (at most; evenly sampled), besides every SCAN. */
export const REPLAYED_SCRIPTS_PER_REFRESH = 200;

export function budgetLabel(budget: { keysPerRefresh: number; locksPerRefresh: number }): string {
  const isDefault = budget.keysPerRefresh === DEFAULT_BUDGET.keysPerRefresh && budget.locksPerRefresh === DEFAULT_BUDGET.locksPerRefresh;
  return `${budget.keysPerRefresh.toLocaleString('en-US')} keys / ${budget.locksPerRefresh.toLocaleString('en-US')} locks${isDefault ? ' (default)' : ''}`;
}
