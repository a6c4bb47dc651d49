import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { LiveInstanceInfo, LockInfo } from '../introspection/lock-info';
import { LockInspector } from '../introspection/lock-inspector';
import { NameGlob } from '../introspection/name-glob';
import { LockEngine } from '../runtime/lock-engine';
import { ContentionHistory, type BoardContention } from './contention-history';
import { KeyspaceWalk, MAX_KNOWN_NAMES, type WalkResult } from './keyspace-walk';
import { RESOLVED_BOARD_OPTIONS } from './lock-board.tokens';
import { BOARD_NEEDS_LOCK_MODULE, BOARD_UNAVAILABLE, BOARD_WALK_NAMES_FULL, BOARD_WALK_PARTIAL, BOARD_WALK_TRUNCATED } from './lock-board.messages';
import type { ResolvedLockBoardOptions } from './lock-board.options';

/** What the page's `api/snapshot` answers (docs/lock-board.md#api). */
export interface BoardSnapshot {
  /** The Redis server's clock (ms) when the refresh read it: every TTL and `heldSince` is on it. */
  readonly serverTime: number;
  readonly refreshMs: number;
  readonly forceRelease: boolean;
  /** The name filter this view was made for. */
  readonly match: string | null;
  readonly walk: {
    readonly complete: boolean;
    readonly keysScanned: number;
    readonly locksInspected: number;
    readonly truncated: boolean;
    readonly budget: { readonly keysPerRefresh: number; readonly locksPerRefresh: number };
    readonly message?: string;
  };
  /** Held (or waited for) reentrant, fair and read-write locks, by name. */
  readonly locks: readonly LockInfo[];
  /** Semaphores with holders or waiters, by name. */
  readonly semaphores: readonly LockInfo[];
  readonly instances: readonly LiveInstanceInfo[];
  readonly instancesMore: boolean;
  readonly contention: readonly BoardContention[];
  /** Redis could not be read: the last view is kept, and this says why. */
  readonly error?: string;
}

/** A refresh's reading, shared by every viewer; each viewer's filter is applied to it. */
interface Reading {
  readonly at: number;
  readonly serverTime: number;
  readonly walk: WalkResult;
  readonly instances: readonly LiveInstanceInfo[];
  readonly instancesMore: boolean;
}

/** Filters seen within this many refreshes are inspected first by the walk. */
const FILTER_MEMORY_REFRESHES = 5;
const MAX_FILTERS = 8;

/**
 * One bounded walk of Redis per refresh, shared by every viewer (docs/lock-board.md#cost): a
 * request finds the latest reading fresh (younger than `refreshMs`), or waits for the one refresh
 * in flight, or starts it. A viewer's filter picks from the reading; filters seen lately are
 * inspected first when the keyspace holds more locks than one refresh may inspect.
 */
@Injectable()
export class BoardSnapshots implements OnModuleInit {
  private engine!: LockEngine;
  private inspector!: LockInspector;
  private walk!: KeyspaceWalk;
  private contention!: ContentionHistory;
  private latest: Reading | undefined;
  private inFlight: Promise<Reading> | undefined;
  private lastError: string | undefined;
  /** Filter text -> when it was last asked for (ms, this process's clock). */
  private readonly filters = new Map<string, { glob: NameGlob; askedAt: number }>();

  constructor(
    @Inject(RESOLVED_BOARD_OPTIONS) private readonly options: ResolvedLockBoardOptions,
    private readonly moduleRef: ModuleRef,
  ) {}

  onModuleInit(): void {
    try {
      this.engine = this.moduleRef.get(LockEngine, { strict: false });
      this.inspector = this.moduleRef.get(LockInspector, { strict: false });
    } catch {
      throw new Error(BOARD_NEEDS_LOCK_MODULE);
    }
    this.walk = new KeyspaceWalk(this.engine, this.inspector, this.options.keysPerRefresh, this.options.locksPerRefresh);
    this.contention = new ContentionHistory(this.engine);
  }

  /** Checks a filter before any Redis work (a bad one is the caller's 400). */
  parseMatch(match: string | undefined): NameGlob | undefined {
    if (match === undefined || match === '') return undefined;
    return NameGlob.parse(match, 2 * this.engine.options.maxNameLength);
  }

  async snapshot(match: string | undefined): Promise<BoardSnapshot> {
    const glob = this.parseMatch(match);
    if (glob && match) {
      this.filters.delete(match);
      this.filters.set(match, { glob, askedAt: Date.now() });
      if (this.filters.size > MAX_FILTERS) this.filters.delete(this.filters.keys().next().value as string);
    }
    const reading = await this.reading();
    return this.view(reading, glob, match);
  }

  private async reading(): Promise<Reading> {
    const { latest } = this;
    if (latest && Date.now() - latest.at < this.options.refreshMs) return latest;
    if (!this.inFlight) {
      this.inFlight = this.refresh().finally(() => (this.inFlight = undefined));
    }
    try {
      return await this.inFlight;
    } catch (error) {
      this.lastError = BOARD_UNAVAILABLE(error);
      if (this.latest) return this.latest;
      throw error;
    }
  }

  private async refresh(): Promise<Reading> {
    const since = Date.now() - FILTER_MEMORY_REFRESHES * this.options.refreshMs;
    const wanted = [...this.filters.values()].filter(({ askedAt }) => askedAt >= since).map(({ glob }) => glob);
    const walk = await this.walk.refresh(wanted);
    const live = await this.inspector.liveInstances({ count: 100 });
    await this.contention.update(
      live.instances.map((instance) => instance.clientId),
      live.serverTime,
    );
    this.lastError = undefined;
    this.latest = { at: Date.now(), serverTime: live.serverTime, walk, instances: live.instances, instancesMore: live.more };
    return this.latest;
  }

  private view(reading: Reading, glob: NameGlob | undefined, match: string | undefined): BoardSnapshot {
    const { walk } = reading;
    const shown = walk.inspected.filter((info) => !glob || glob.matches(info.name));
    const hidden = walk.uninspected.filter((name) => !glob || glob.matches(name)).length;
    const messages: string[] = [];
    if (!walk.complete) messages.push(BOARD_WALK_PARTIAL(walk.keysScanned, walk.keyspaceSize));
    if (hidden > 0) messages.push(BOARD_WALK_TRUNCATED(shown.length, shown.length + hidden));
    if (walk.namesFull) messages.push(BOARD_WALK_NAMES_FULL(MAX_KNOWN_NAMES));
    return {
      serverTime: reading.serverTime,
      refreshMs: this.options.refreshMs,
      forceRelease: this.options.allowForceRelease,
      match: match || null,
      walk: {
        complete: walk.complete,
        keysScanned: walk.keysScanned,
        locksInspected: walk.inspected.length,
        truncated: hidden > 0,
        budget: { keysPerRefresh: this.options.keysPerRefresh, locksPerRefresh: this.options.locksPerRefresh },
        ...(messages.length > 0 ? { message: messages.join(' ') } : {}),
      },
      locks: shown.filter((info) => info.kind !== 'semaphore'),
      semaphores: shown.filter((info) => info.kind === 'semaphore'),
      instances: reading.instances,
      instancesMore: reading.instancesMore,
      contention: this.contention.view(glob),
      ...(this.lastError ? { error: this.lastError } : {}),
    };
  }
}
