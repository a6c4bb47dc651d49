import { randomBytes } from 'node:crypto';
import { error, WRONGTYPE, type Reply } from './replies';

interface ValueTypes {
  string: string;
  hash: Map<string, string>;
  list: string[];
  zset: Map<string, number>;
}
export type ValueType = keyof ValueTypes;

export interface Entry {
  type: ValueType;
  value: ValueTypes[ValueType];
  expiresAt?: number;
}

/** The keys of one simulated server with their values and expiry (read on the server's clock when touched). */
export class KeyStore {
  private readonly entries = new Map<string, Entry>();
  /** This server's `run_id` in INFO (RedLock tells two entries of one server apart by it). */
  readonly runId = randomBytes(20).toString('hex');
  private lastMicros = 0;

  /**
   * TIME in microseconds at `now` (ms): the server's clock has no microseconds, so two calls in one
   * millisecond would read the same time where Redis's clock moved on; it never repeats here.
   */
  microsAt(now: number): number {
    this.lastMicros = Math.max(now * 1000, this.lastMicros + 1);
    return this.lastMicros;
  }

  /** Every live key (SCAN, and the testing controls). */
  keys(now: number): string[] {
    const keys: string[] = [];
    for (const key of this.entries.keys()) if (this.lookup(key, now)) keys.push(key);
    return keys;
  }

  typeOf(key: string, now: number): string {
    return this.lookup(key, now)?.type ?? 'none';
  }

  delete(key: string): boolean {
    return this.entries.delete(key);
  }

  flush(): void {
    this.entries.clear();
  }

  /** The live entry of `key` (an expired one is removed on the way). */
  lookup(key: string, now: number): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry?.expiresAt !== undefined && entry.expiresAt <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  /** The live value of `key` if it has `type`; WRONGTYPE for another type. */
  read<T extends ValueType>(key: string, type: T, now: number): ValueTypes[T] | undefined {
    const entry = this.lookup(key, now);
    if (!entry) return undefined;
    if (entry.type !== type) throw error(WRONGTYPE);
    return entry.value as ValueTypes[T];
  }

  /** The value of `key` for writing, created empty (without expiry) when missing. */
  write<T extends ValueType>(key: string, type: T, now: number, empty: () => ValueTypes[T]): ValueTypes[T] {
    const current = this.read(key, type, now);
    if (current !== undefined) return current;
    const value = empty();
    this.entries.set(key, { type, value });
    return value;
  }

  /** Sets a string, dropping any expiry unless `expiresAt` is given. */
  setString(key: string, value: string, expiresAt: number | undefined): void {
    this.entries.set(key, expiresAt === undefined ? { type: 'string', value } : { type: 'string', value, expiresAt });
  }

  /** Drops a container that became empty (Redis never keeps an empty hash, list or sorted set). */
  dropIfEmpty(key: string, size: number): void {
    if (size === 0) this.entries.delete(key);
  }
}

/** One command of the keyspace: its least number of arguments, and what it does. */
export interface Command {
  readonly minArgs: number;
  run(keyspace: KeyStore, args: readonly string[], now: number): Reply;
}

export type Commands = Record<string, Command>;
