import type { LockInfo } from '../introspection/lock-info';
import type { LockInspector } from '../introspection/lock-inspector';
import { escapeRedisGlob } from '../redis/redis-glob';
import type { RedisClient } from '../redis/redis-client';
import type { LockEngine } from '../engine/lock-engine';
import { MatchBudget, type BoardFilter, type Matchable } from './board-filters';
import { BOARD_WAITERS_PER_LOCK } from './lock-board.options';

/** Keys SCAN looks at per call: small enough that one call never holds Redis up for long (1 to 2.5 ms measured, bench/RESULTS.md). */
const SCAN_COUNT = 1_000;
/** Names the walk remembers between refreshes (about 20 MB of heap at most, measured). */
export const MAX_KNOWN_NAMES = 100_000;
/** Past that, names a viewer filters for are still remembered, up to this many more. */
export const MAX_FILTERED_OVERFLOW = 5_000;
/** Names looked at between two yields to the event loop (the app's leases are renewed on it). */
const YIELD_EVERY = 2_000;

/** `redisson`: a hash of layout 'redisson', whose kind only its inspection tells (its name is the key). */
type Kind = 'reentrant' | 'readWrite' | 'semaphore' | 'redisson';
interface Found extends Matchable {
  readonly kind: Kind;
  readonly name: string;
}

/** What one view (unfiltered, or one filter) of a refresh shows. */
export interface WalkView {
  /** Locks and semaphores inspected this refresh that are held or waited for, by name. */
  readonly shown: readonly LockInfo[];
  /** Matching names known but not inspected this refresh (over `locksPerRefresh`). */
  readonly hidden: number;
  /** Known names the filter could not be checked against yet (the match budget): later refreshes do. */
  readonly unchecked: number;
}

/** What one refresh of the walk read. */
export interface WalkResult {
  /** Per filter text (null: no filter), what it shows. */
  readonly views: ReadonlyMap<string | null, WalkView>;
  /**
   * Keys SCAN walked this refresh: the keys in Redis (DBSIZE) when that is fewer than the COUNT it
   * asked for (a small keyspace is walked whole), else that count (at most the budget).
   */
  readonly keysScanned: number;
  /** Inspect calls made this refresh (at most `locksPerRefresh`). */
  readonly inspections: number;
  /** A whole pass over the keyspace fitted in this refresh: the view is exact. */
  readonly complete: boolean;
  /** Keys in the keyspace (DBSIZE, summed over masters), when the view is partial. */
  readonly keyspaceSize: number | undefined;
  /** This refresh met names it could not remember (past `MAX_KNOWN_NAMES`, not asked for by a filter). */
  readonly namesFull: boolean;
}

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The board's bounded walk of Redis (docs/lock-board.md#cost): each refresh SCANs on from where
 * the last one stopped, at most `keysPerRefresh` keys in calls of 1,000 (each a short command, so
 * the walk never blocks Redis), and inspects at most `locksPerRefresh` of the names it knows: those
 * found in this pass or the last complete one, names a viewer filters for first. A keyspace smaller
 * than the budget is walked whole on every refresh; a bigger one over several, and the board says so.
 * The work in this process is bounded too: no sort of the known names, glob verdicts remembered per
 * name within a per-refresh budget, and a yield to the event loop every 2,000 names.
 */
export class KeyspaceWalk {
  /** Per master (by index), where the pass stands; '0' at a pass's start. */
  private cursors: string[] = [];
  private master = 0;
  private passStarted = false;
  /** Names seen in the pass under way, and in the last complete one (key -> found). */
  private current = new Map<string, Found>();
  private previous = new Map<string, Found>();
  /** Whether this refresh met a name it could not remember (the memory was full). */
  private dropped = false;
  /** Layout 'redisson': hashes found not to be locks in this pass, not inspected again until the next. */
  private foreign = new Set<string>();

  constructor(
    private readonly engine: LockEngine,
    private readonly inspector: LockInspector,
    private readonly keysPerRefresh: number,
    private readonly locksPerRefresh: number,
    /** How many names it remembers, and how many more a filter may add past them (lower in tests). */
    private readonly memory = { names: MAX_KNOWN_NAMES, filteredOverflow: MAX_FILTERED_OVERFLOW },
  ) {}

  /** One refresh: walk on within the budget, then inspect the known names (the filters' first). */
  async refresh(filters: readonly BoardFilter[], budget = new MatchBudget()): Promise<WalkResult> {
    const masters = this.inspector.masters();
    if (this.cursors.length !== masters.length) this.restartPass(masters.length);
    const startedFresh = !this.passStarted;
    this.passStarted = true;
    // Layout 'redisson': lock keys are bare mapped names, so every hash is a candidate.
    const pattern = this.inspector.redissonLayout ? '*' : `${escapeRedisGlob(this.engine.options.keyPrefix)}*`;
    let scanned = 0;
    let finishedPass = false;
    this.dropped = false;
    while (scanned < this.keysPerRefresh) {
      const node = masters[this.master];
      const count = Math.min(SCAN_COUNT, this.keysPerRefresh - scanned);
      const [next, keys] = (await this.engine.call('lock board', () =>
        node.scan(this.cursors[this.master], 'MATCH', pattern, 'COUNT', count, 'TYPE', 'hash'),
      )) as [string, string[]];
      scanned += count;
      for (const key of keys) this.remember(key, filters, budget);
      this.cursors[this.master] = next;
      if (next !== '0') continue;
      this.master += 1;
      if (this.master < masters.length) continue;
      finishedPass = true;
      break;
    }
    const complete = finishedPass && startedFresh;
    if (finishedPass) {
      this.previous = this.current;
      this.restartPass(masters.length);
      this.foreign = new Set();
    }
    // SCAN's COUNT is how many keys it may look at, not how many there are: 1,000 asked of 13 keys walks 13.
    const size = await this.keyspaceSize(masters);
    const keysScanned = size === undefined ? scanned : Math.min(scanned, size);
    const known = this.known();
    const { inspected, inspections } = await this.inspectKnown(known, filters, budget);
    const views = await this.views(known, inspected, filters, budget);
    return { views, keysScanned, inspections, complete, keyspaceSize: complete ? undefined : size, namesFull: this.dropped };
  }

  private restartPass(masters: number): void {
    this.cursors = new Array<string>(masters).fill('0');
    this.master = 0;
    this.passStarted = false;
    this.current = new Map();
  }

  private remember(key: string, filters: readonly BoardFilter[], budget: MatchBudget): void {
    const known = this.current.get(key) ?? this.previous.get(key);
    if (known) {
      this.current.set(key, known);
      return;
    }
    const found = this.found(key);
    if (!found) return;
    const { names, filteredOverflow } = this.memory;
    if (this.current.size >= names) {
      // Full: only names a viewer filters for, so that narrowing the filter does show them.
      if (this.current.size >= names + filteredOverflow || !filters.some((filter) => filter.verdict(found, budget))) {
        this.dropped = true;
        return;
      }
    }
    this.current.set(key, found);
  }

  /** What a scanned key is: a lock of this library's keys, or (layout 'redisson') any hash not known to be foreign. */
  private found(key: string): Found | undefined {
    if (this.inspector.redissonLayout) {
      if (this.foreign.has(key) || key.startsWith(this.engine.instances.keyPrefix)) return undefined;
      return { kind: 'redisson', name: key };
    }
    const parsed = this.engine.keys.parse(key);
    if (!parsed) return undefined;
    const kind: Kind = parsed.kind === 'readWrite' ? 'readWrite' : parsed.kind === 'semaphore' ? 'semaphore' : 'reentrant';
    return { kind, name: parsed.name };
  }

  private known(): Map<string, Found> {
    if (this.previous.size === 0) return this.current;
    const all = new Map(this.previous);
    for (const [key, found] of this.current) all.set(key, found);
    return all;
  }

  /** Inspects up to `locksPerRefresh` known names, those a filter matches first; drops the ones gone. */
  private async inspectKnown(
    known: Map<string, Found>,
    filters: readonly BoardFilter[],
    budget: MatchBudget,
  ): Promise<{ inspected: Map<Found, LockInfo>; inspections: number }> {
    const wanted: Array<[string, Found]> = [];
    const rest: Array<[string, Found]> = [];
    let seen = 0;
    for (const entry of known) {
      if (++seen % YIELD_EVERY === 0) await yieldToLoop();
      (filters.some((filter) => filter.verdict(entry[1], budget) === true) ? wanted : rest).push(entry);
    }
    const inspected = new Map<Found, LockInfo>();
    let inspections = 0;
    for (const [key, found] of [...wanted, ...rest]) {
      if (inspections >= this.locksPerRefresh) break;
      inspections += 1;
      const info = await this.inspect(found);
      if (info && (info.locked || (info.waiterCount ?? info.waiters?.length ?? 0) > 0)) inspected.set(found, info);
      else {
        if (!info) this.foreign.add(key);
        // Gone (released, expired): forgotten until a pass finds it again.
        this.current.delete(key);
        this.previous.delete(key);
        known.delete(key);
      }
    }
    return { inspected, inspections };
  }

  /** The unfiltered view and one per filter, from the verdicts remembered on each name. */
  private async views(
    known: Map<string, Found>,
    inspected: Map<Found, LockInfo>,
    filters: readonly BoardFilter[],
    budget: MatchBudget,
  ): Promise<Map<string | null, WalkView>> {
    const byName = (a: LockInfo, b: LockInfo): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    const views = new Map<string | null, WalkView>();
    views.set(null, { shown: [...inspected.values()].sort(byName), hidden: Math.max(0, known.size - inspected.size), unchecked: 0 });
    for (const filter of filters) {
      const shown: LockInfo[] = [];
      let hidden = 0;
      let unchecked = 0;
      let seen = 0;
      for (const found of known.values()) {
        if (++seen % YIELD_EVERY === 0) await yieldToLoop();
        const matched = filter.verdict(found, budget);
        if (matched === undefined) unchecked += 1;
        else if (matched) {
          const info = inspected.get(found);
          if (info) shown.push(info);
          else hidden += 1;
        }
      }
      views.set(filter.text, { shown: shown.sort(byName), hidden, unchecked });
    }
    return views;
  }

  /** One lock as `inspect()` reads it, its line cut to its first waiters (a line of 20,000 is one short script). */
  private inspect(found: Found): Promise<LockInfo | undefined> {
    const options = { waiterLimit: BOARD_WAITERS_PER_LOCK };
    if (found.kind === 'redisson') return this.inspector.inspectKey(found.name, options);
    if (found.kind === 'readWrite') return this.inspector.inspectReadWrite(found.name, options);
    if (found.kind === 'semaphore') return this.inspector.inspectSemaphore(found.name, options);
    return this.inspector.inspectLock(found.name, 'reentrant', options);
  }

  private async keyspaceSize(masters: RedisClient[]): Promise<number | undefined> {
    try {
      const sizes = await Promise.all(masters.map((node) => this.engine.call('lock board', () => node.dbsize())));
      return sizes.reduce((sum: number, size) => sum + Number(size), 0);
    } catch {
      return undefined;
    }
  }
}
