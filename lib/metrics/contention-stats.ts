/**
 * Per-name contention of this module instance, for the lock board (docs/lock-board.md#contention):
 * how many acquisitions had to wait, their wait time, how many of those timed out, and how many
 * calls skipped the lock (`skipIfLocked`: not waits). Counted only for an acquisition that missed at least once, so
 * an uncontended lock costs nothing here. Cumulative since the instance started, for at most
 * `MAX_NAMES` names (the least recently contended one makes room); the heartbeat writes them (a few
 * KB at most) to a key beside the instance's identity whenever they changed, where the board reads
 * every instance's.
 */
export interface ContentionCounters {
  /** Acquisitions that found the lock busy at least once and waited for it (acquired, timed out or failed; skips are not counted here). */
  waits: number;
  /** Their time from the first attempt to the outcome, in ms. */
  waitMs: number;
  /** Of the waits, those that ended without the lock when their wait was up. */
  timeouts: number;
  /** `skipIfLocked` calls that found the lock busy and did not run: neither waits nor wait time. */
  skips: number;
}

/** The encoded form in the instance hash: `{ at, names: { [name]: [waits, waitMs, timeouts, skips] } }`. */
export interface EncodedContention {
  /** This process's clock (ms since the epoch) when encoded: only for a reader's diagnostics. */
  readonly at: number;
  readonly names: Record<string, [number, number, number, number]>;
}

/** Names kept per instance: bounds the memory here. */
export const MAX_NAMES = 100;
/** A name as written for the board: cut to this many characters (a name may be up to `maxNameLength`). */
export const MAX_WRITTEN_NAME = 200;
/** The written JSON's size at most, in characters: the least recently contended names are left out past it. */
export const MAX_WRITTEN_CHARS = 16_384;

/** How an acquisition that waited ended. */
export type WaitEnd = 'acquired' | 'timeout' | 'skipped' | 'other';

export class ContentionStats {
  /** Insertion order is recency: a name is moved to the end on every update. */
  private readonly names = new Map<string, ContentionCounters>();
  private changed = false;

  /** One acquisition that missed at least once has ended after `waitMs`. */
  waited(name: string, waitMs: number, end: WaitEnd): void {
    let counters = this.names.get(name);
    if (counters) this.names.delete(name);
    else {
      counters = { waits: 0, waitMs: 0, timeouts: 0, skips: 0 };
      if (this.names.size >= MAX_NAMES) this.names.delete(this.names.keys().next().value as string);
    }
    if (end === 'skipped') counters.skips += 1;
    else {
      counters.waits += 1;
      counters.waitMs += Math.max(0, Math.round(waitMs));
      if (end === 'timeout') counters.timeouts += 1;
    }
    this.names.set(name, counters);
    this.changed = true;
  }

  /** The counters now (a copy). */
  snapshot(): Map<string, ContentionCounters> {
    return new Map([...this.names].map(([name, counters]) => [name, { ...counters }]));
  }

  /** The JSON the heartbeat writes, or undefined when nothing changed since the last call. */
  takeChanged(): string | undefined {
    if (!this.changed) return undefined;
    this.changed = false;
    return encodeContention(this.names);
  }

  /** The write of `takeChanged`'s JSON failed: the next heartbeat writes again. */
  unwritten(): void {
    this.changed = this.names.size > 0;
  }
}

/**
 * The counters as the heartbeat writes them: bounded whatever the names (each cut to 200
 * characters, with `…`; the most recently contended first until 16 KB).
 */
export function encodeContention(names: ReadonlyMap<string, ContentionCounters>): string {
  const encoded: EncodedContention = { at: Date.now(), names: {} };
  let size = 40;
  for (const [name, c] of [...names].reverse()) {
    const written = name.length > MAX_WRITTEN_NAME ? `${name.slice(0, MAX_WRITTEN_NAME)}…` : name;
    const values: [number, number, number, number] = [c.waits, c.waitMs, c.timeouts, c.skips];
    const entrySize = JSON.stringify(written).length + JSON.stringify(values).length + 2;
    if (size + entrySize > MAX_WRITTEN_CHARS) break;
    size += entrySize;
    encoded.names[written] = values;
  }
  return JSON.stringify(encoded);
}

/** Reads what another instance wrote; anything malformed reads as nothing (it is only a view). */
export function decodeContention(text: unknown): Map<string, ContentionCounters> {
  const found = new Map<string, ContentionCounters>();
  if (typeof text !== 'string' || text === '' || text.length > 2 * MAX_WRITTEN_CHARS) return found;
  try {
    const parsed = JSON.parse(text) as Partial<EncodedContention>;
    const names = parsed && typeof parsed.names === 'object' && parsed.names ? parsed.names : {};
    for (const [name, values] of Object.entries(names)) {
      if (!Array.isArray(values) || values.length < 4 || !values.every((v) => Number.isFinite(v) && v >= 0)) continue;
      const [waits, waitMs, timeouts, skips] = values as number[];
      found.set(name, { waits, waitMs, timeouts, skips });
      if (found.size >= MAX_NAMES) break;
    }
  } catch {
    // An unreadable field is skipped: the board shows the other instances.
  }
  return found;
}
