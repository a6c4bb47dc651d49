import type { LockInfo } from '../introspection/lock-info';
import type { LockInspector } from '../introspection/lock-inspector';
import type { NameGlob } from '../introspection/name-glob';
import { escapeRedisGlob } from '../redis/redis-glob';
import { isCluster, type RedisClient } from '../redis/redis-client';
import type { LockEngine } from '../runtime/lock-engine';

/** Keys SCAN looks at per call: small enough that one call never holds Redis up for long (about 1 ms). */
const SCAN_COUNT = 1_000;
/** Names the walk remembers between refreshes (a few MB at most). */
export const MAX_KNOWN_NAMES = 100_000;

type Kind = 'reentrant' | 'readWrite' | 'semaphore';
interface Found {
  readonly kind: Kind;
  readonly name: string;
}

/** What one refresh of the walk read. */
export interface WalkResult {
  /** Locks and semaphores inspected this refresh that are held or waited for. */
  readonly inspected: readonly LockInfo[];
  /** Names known to exist but not inspected this refresh (over the budget). */
  readonly uninspected: readonly string[];
  /** Keys SCAN looked at this refresh (at most the budget, rounded up to SCAN's step). */
  readonly keysScanned: number;
  /** A whole pass over the keyspace fitted in this refresh: the view is exact. */
  readonly complete: boolean;
  /** Keys in the keyspace (DBSIZE, summed over masters), when it could be read. */
  readonly keyspaceSize: number | undefined;
  /** The walk stopped remembering names (`MAX_KNOWN_NAMES`). */
  readonly namesFull: boolean;
}

/**
 * The board's bounded walk of Redis (docs/lock-board.md#cost): each refresh SCANs on from where
 * the last one stopped, at most `keysPerRefresh` keys in calls of 1,000 (each a short command, so
 * the walk never blocks Redis), and inspects at most `locksPerRefresh` of the names it knows: those
 * found in this pass or the last complete one, names a viewer filters for first. A keyspace smaller
 * than the budget is walked whole on every refresh; a bigger one over several, and the board says so.
 */
export class KeyspaceWalk {
  /** Per master (by index), where the pass stands; '0' at a pass's start. */
  private cursors: string[] = [];
  private master = 0;
  private passStarted = false;
  /** Names seen in the pass under way, and in the last complete one. */
  private current = new Map<string, Found>();
  private previous = new Map<string, Found>();

  constructor(
    private readonly engine: LockEngine,
    private readonly inspector: LockInspector,
    private readonly keysPerRefresh: number,
    private readonly locksPerRefresh: number,
  ) {}

  /** One refresh: walk on within the budget, then inspect the known names (`first` before the rest). */
  async refresh(first: readonly NameGlob[]): Promise<WalkResult> {
    const masters = this.masters();
    if (this.cursors.length !== masters.length) this.restartPass(masters.length);
    const startedFresh = !this.passStarted;
    this.passStarted = true;
    const pattern = `${escapeRedisGlob(this.engine.options.keyPrefix)}*`;
    let scanned = 0;
    let finishedPass = false;
    while (scanned < this.keysPerRefresh) {
      const node = masters[this.master];
      const count = Math.min(SCAN_COUNT, this.keysPerRefresh - scanned);
      const [next, keys] = (await this.engine.call('lock board', () =>
        node.scan(this.cursors[this.master], 'MATCH', pattern, 'COUNT', count, 'TYPE', 'hash'),
      )) as [string, string[]];
      scanned += count;
      for (const key of keys) this.remember(key);
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
    }
    const keyspaceSize = complete ? undefined : await this.keyspaceSize(masters);
    const { inspected, uninspected } = await this.inspectKnown(first);
    return { inspected, uninspected, keysScanned: scanned, complete, keyspaceSize, namesFull: this.known().size >= MAX_KNOWN_NAMES };
  }

  private restartPass(masters: number): void {
    this.cursors = new Array<string>(masters).fill('0');
    this.master = 0;
    this.passStarted = false;
    this.current = new Map();
  }

  private remember(key: string): void {
    const found = this.engine.keys.parse(key);
    if (!found || this.current.size >= MAX_KNOWN_NAMES) return;
    const kind: Kind = found.kind === 'readWrite' ? 'readWrite' : found.kind === 'semaphore' ? 'semaphore' : 'reentrant';
    this.current.set(key, { kind, name: found.name });
  }

  private known(): Map<string, Found> {
    if (this.previous.size === 0) return this.current;
    const all = new Map(this.previous);
    for (const [key, found] of this.current) all.set(key, found);
    return all;
  }

  private async inspectKnown(first: readonly NameGlob[]): Promise<{ inspected: LockInfo[]; uninspected: string[] }> {
    const known = [...this.known()];
    const wanted = (found: Found): boolean => first.some((glob) => glob.matches(found.name));
    // Names a viewer filters for first, then the rest, each in name order (a stable page).
    known.sort(([, a], [, b]) => Number(wanted(b)) - Number(wanted(a)) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const inspected: LockInfo[] = [];
    const uninspected: string[] = [];
    let calls = 0;
    for (const [key, found] of known) {
      if (calls >= this.locksPerRefresh) {
        uninspected.push(found.name);
        continue;
      }
      calls += 1;
      const info = await this.inspect(found);
      if (info.locked || (info.waiters?.length ?? 0) > 0) inspected.push(info);
      else {
        // Gone (released, expired): forgotten until a pass finds it again.
        this.current.delete(key);
        this.previous.delete(key);
      }
    }
    return { inspected, uninspected };
  }

  private inspect(found: Found): Promise<LockInfo> {
    if (found.kind === 'readWrite') return this.inspector.inspectReadWrite(found.name);
    if (found.kind === 'semaphore') return this.inspector.inspectSemaphore(found.name);
    return this.inspector.inspectLock(found.name, 'reentrant');
  }

  private async keyspaceSize(masters: RedisClient[]): Promise<number | undefined> {
    try {
      const sizes = await Promise.all(masters.map((node) => this.engine.call('lock board', () => node.dbsize())));
      return sizes.reduce((sum: number, size) => sum + Number(size), 0);
    } catch {
      return undefined;
    }
  }

  private masters(): RedisClient[] {
    const { client } = this.engine;
    return isCluster(client) ? (client.nodes('master') as RedisClient[]) : [client];
  }
}
