import { decodeContention, type ContentionCounters } from '../metrics/contention-stats';
import { contentionKeyOf, InstanceRegistry } from '../runtime/instance-registry';
import type { LockEngine } from '../engine/lock-engine';
import type { BoardFilter, MatchBudget, Matchable } from './board-filters';

/** Points kept per name (one per refresh that saw a change anywhere). */
const MAX_POINTS = 60;
/** Names shown, the most contended first. */
const MAX_NAMES_SHOWN = 50;

export interface ContentionPoint extends ContentionCounters {
  /** The Redis server's clock (ms) at the refresh that saw the increase. */
  readonly at: number;
}

/** One name's contention as the board shows it. */
export interface BoardContention {
  readonly name: string;
  /** Since the live instances started (each instance counts its own, docs/lock-board.md#contention). */
  readonly totals: ContentionCounters;
  /** The increase since the previous point, oldest first (at most 60). */
  readonly points: readonly ContentionPoint[];
}

const zero = (): ContentionCounters => ({ waits: 0, waitMs: 0, timeouts: 0, skips: 0 });

function add(into: ContentionCounters, counters: ContentionCounters): void {
  into.waits += counters.waits;
  into.waitMs += counters.waitMs;
  into.timeouts += counters.timeouts;
  into.skips += counters.skips;
}

/** A name's totals, kept across refreshes with the filters' verdicts on it. */
interface NameTotals extends Matchable {
  readonly name: string;
  totals: ContentionCounters;
}

/**
 * Contention per name over time: every instance counts its own waits, timeouts and skips per name
 * and its heartbeat writes them beside its identity (lib/metrics/contention-stats.ts); each refresh
 * reads the live instances' counters (this instance's from memory), and a point is the increase
 * since the previous refresh. An instance that restarted (its counters went down) counts from zero;
 * one whose counters could not be read this time keeps its last ones (missing is not zero).
 */
export class ContentionHistory {
  private lastSeen = new Map<string, Map<string, ContentionCounters>>();
  private points: Array<{ at: number; byName: Map<string, ContentionCounters> }> = [];
  private names = new Map<string, NameTotals>();

  constructor(private readonly engine: LockEngine) {}

  /** Reads the live instances' counters and records the increase as one point at `serverTime`. */
  async update(clientIds: readonly string[], serverTime: number): Promise<void> {
    const read = await this.read(clientIds);
    const counters = new Map<string, Map<string, ContentionCounters>>();
    const increase = new Map<string, ContentionCounters>();
    const totals = new Map<string, ContentionCounters>();
    for (const [clientId, fresh] of read) {
      const before = this.lastSeen.get(clientId);
      const byName = fresh ?? before ?? new Map<string, ContentionCounters>();
      counters.set(clientId, byName);
      for (const [name, now] of byName) {
        add(totals.get(name) ?? totals.set(name, zero()).get(name)!, now);
        // First sight of an instance: its counters are history before the board looked (totals only).
        if (!before || !fresh) continue;
        const was = before.get(name);
        const restarted = was && (now.waits < was.waits || now.waitMs < was.waitMs || now.skips < was.skips);
        const delta = !was || restarted ? now : { waits: now.waits - was.waits, waitMs: now.waitMs - was.waitMs, timeouts: now.timeouts - was.timeouts, skips: now.skips - was.skips };
        if (delta.waits === 0 && delta.timeouts === 0 && delta.skips === 0) continue;
        add(increase.get(name) ?? increase.set(name, zero()).get(name)!, delta);
      }
    }
    this.lastSeen = counters;
    const names = new Map<string, NameTotals>();
    for (const [name, sum] of totals) {
      const entry = this.names.get(name) ?? { name, totals: sum };
      entry.totals = sum;
      names.set(name, entry);
    }
    this.names = names;
    this.points.push({ at: serverTime, byName: increase });
    if (this.points.length > MAX_POINTS) this.points.shift();
  }

  /** The names with any contention (waits or skips), the most first, that `filter` matches (within the budget). */
  view(filter: BoardFilter | undefined, budget: MatchBudget): BoardContention[] {
    const busy = (totals: ContentionCounters) => totals.waits + totals.skips;
    const names = [...this.names.values()]
      .filter((entry) => busy(entry.totals) > 0 && (!filter || filter.verdict(entry, budget) === true))
      .sort((a, b) => busy(b.totals) - busy(a.totals) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .slice(0, MAX_NAMES_SHOWN);
    return names.map(({ name, totals }) => ({
      name,
      totals: { ...totals },
      points: this.points.map(({ at, byName }) => ({ at, ...(byName.get(name) ?? zero()) })),
    }));
  }

  /** Each live instance's counters: this one's from memory, the others' from Redis (undefined: not read). */
  private async read(clientIds: readonly string[]): Promise<Map<string, Map<string, ContentionCounters> | undefined>> {
    const { engine } = this;
    const self = engine.instances.self.clientId;
    const result = new Map<string, Map<string, ContentionCounters> | undefined>();
    result.set(self, engine.contention.snapshot());
    const others = clientIds.filter((id) => id !== self);
    const texts = await Promise.all(
      others.map((clientId) =>
        engine
          .call('lock board', () => engine.client.get(contentionKeyOf(InstanceRegistry.keyOf(engine.instances.keyPrefix, clientId))))
          .catch(() => undefined),
      ),
    );
    others.forEach((clientId, i) => result.set(clientId, texts[i] == null ? undefined : decodeContention(texts[i])));
    return result;
  }
}
