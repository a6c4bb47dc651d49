import { NameGlob } from '../introspection/name-glob';

/** A board filter's longest pattern: a glob match costs name length x pattern length. */
export const MAX_FILTER_LENGTH = 100;
/** Filters the walk serves at once (the latest ones asked for); an older one waits its turn. */
export const MAX_ACTIVE_FILTERS = 4;
/**
 * Glob work one refresh may do, in name characters x pattern characters (about 2 ns each: some 40
 * ms of this process's CPU per refresh at most, spread between yields). Verdicts are remembered per
 * name, so a big keyspace is classified over several refreshes, never in one long stall.
 */
export const MATCH_BUDGET_PER_REFRESH = 20_000_000;

/** The glob work left in one refresh. */
export class MatchBudget {
  constructor(private units = MATCH_BUDGET_PER_REFRESH) {}

  /** Takes `cost` units; false (nothing taken) when they are not left. */
  take(cost: number): boolean {
    if (cost > this.units) return false;
    this.units -= cost;
    return true;
  }
}

/** Something the board matches filters against once and remembers the verdicts of. */
export interface Matchable {
  readonly name: string;
  /** Per filter slot: `generation * 2 + (matched ? 1 : 0)`; valid while the slot keeps that generation. */
  verdicts?: number[];
}

/** One filter a viewer asked for, in a slot of the board's few. */
export class BoardFilter {
  constructor(
    readonly text: string,
    readonly glob: NameGlob,
    /** The slot's generation when this filter took it: older verdicts in the slot are not this filter's. */
    private readonly slot: number,
    private readonly generation: number,
    public askedAt: number,
  ) {}

  /**
   * Whether `item`'s name matches: remembered on the item, else worked out if the budget allows;
   * undefined when it does not (the name is left for a later refresh).
   */
  verdict(item: Matchable, budget: MatchBudget): boolean | undefined {
    const known = item.verdicts?.[this.slot];
    if (known !== undefined && Math.floor(known / 2) === this.generation) return known % 2 === 1;
    if (!budget.take(Math.max(1, item.name.length) * Math.max(1, this.text.length))) return undefined;
    const matched = this.glob.matches(item.name);
    (item.verdicts ??= [])[this.slot] = this.generation * 2 + (matched ? 1 : 0);
    return matched;
  }
}

/**
 * The filters viewers asked for lately (at most `MAX_ACTIVE_FILTERS`, the least recently asked one
 * gives its slot up), each checked when asked: a bad or too long pattern is the viewer's 400.
 */
export class BoardFilters {
  private readonly slots: Array<BoardFilter | undefined> = new Array(MAX_ACTIVE_FILTERS).fill(undefined);
  private generations = 0;

  constructor(private readonly maxNameLength: number) {}

  /** Checks a pattern (throws a `TypeError` saying why it is refused) without keeping it. */
  static parse(text: string, maxNameLength: number): NameGlob {
    return NameGlob.parse(text, Math.min(MAX_FILTER_LENGTH, 2 * maxNameLength));
  }

  /** The filter for `text`, taking a slot when it has none (asked now). */
  ask(text: string, now: number): BoardFilter {
    const held = this.slots.find((filter) => filter?.text === text);
    if (held) {
      held.askedAt = now;
      return held;
    }
    const glob = BoardFilters.parse(text, this.maxNameLength);
    let slot = this.slots.indexOf(undefined);
    if (slot === -1) {
      slot = 0;
      for (let i = 1; i < this.slots.length; i++) if (this.slots[i]!.askedAt < this.slots[slot]!.askedAt) slot = i;
    }
    const filter = new BoardFilter(text, glob, slot, ++this.generations, now);
    this.slots[slot] = filter;
    return filter;
  }

  /** The filter for `text` if it holds a slot. */
  find(text: string): BoardFilter | undefined {
    return this.slots.find((filter) => filter?.text === text);
  }

  /** The filters asked for since `since` (the others are not worked for until asked again). */
  active(since: number): BoardFilter[] {
    return this.slots.filter((filter): filter is BoardFilter => filter !== undefined && filter.askedAt >= since);
  }
}
