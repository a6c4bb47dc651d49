import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { LiveInstanceInfo, LockInfo } from '../introspection/lock-info';
import { LockInspector } from '../introspection/lock-inspector';
import { LockEngine } from '../engine/lock-engine';
import { ContentionHistory, type BoardContention } from './contention-history';
import { BoardFilters, MatchBudget } from './board-filters';
import { KeyspaceWalk, MAX_KNOWN_NAMES, type WalkResult } from './keyspace-walk';
import { RESOLVED_BOARD_OPTIONS } from './lock-board.tokens';
import {
  BOARD_FILTER_UNCHECKED,
  BOARD_FILTER_WAITING,
  BOARD_FORCE_RELEASE_REDISSON,
  BOARD_UNAVAILABLE,
  BOARD_WALK_NAMES_FULL,
  BOARD_WALK_PARTIAL,
  BOARD_WALK_TRUNCATED,
} from './lock-board.messages';
import type { ResolvedLockBoardOptions } from './lock-board.options';
import { lockModuleService } from './lock-module-service';

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
    /** Keys this refresh walked: every key in Redis (as DBSIZE counts them) when the walk is complete. */
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

/** A refresh's reading, shared by every viewer; each viewer's filter picks its view from it. */
interface Reading {
  readonly at: number;
  readonly serverTime: number;
  readonly walk: WalkResult;
  readonly instances: readonly LiveInstanceInfo[];
  readonly instancesMore: boolean;
  /** Per filter text (null: none), the contention shown. */
  readonly contention: ReadonlyMap<string | null, readonly BoardContention[]>;
}

/** Filters asked for within this many refreshes are worked for by each refresh. */
const FILTER_MEMORY_REFRESHES = 5;

/**
 * One bounded walk of Redis per refresh, shared by every viewer (docs/lock-board.md#cost): a
 * request finds the latest reading fresh (younger than `refreshMs`), or waits for the one refresh
 * in flight, or starts it, never sooner than `refreshMs` after the last one. A reading holds a view
 * per filter asked for lately (at most four); a request with a new filter waits for the next
 * refresh, which works for it too.
 */
@Injectable()
export class BoardSnapshots implements OnModuleInit {
  private engine!: LockEngine;
  private inspector!: LockInspector;
  private walk!: KeyspaceWalk;
  private contention!: ContentionHistory;
  private filters!: BoardFilters;
  private latest: Reading | undefined;
  private inFlight: Promise<Reading> | undefined;
  private lastError: string | undefined;

  constructor(
    @Inject(RESOLVED_BOARD_OPTIONS) private readonly options: ResolvedLockBoardOptions,
    private readonly moduleRef: ModuleRef,
  ) {}

  onModuleInit(): void {
    this.engine = lockModuleService(this.moduleRef, LockEngine);
    this.inspector = lockModuleService(this.moduleRef, LockInspector);
    // A board force release is conditional on the hold's stored token (docs/lock-board.md#force-release).
    if (this.options.allowForceRelease && this.engine.redisson) throw new Error(BOARD_FORCE_RELEASE_REDISSON);
    this.walk = new KeyspaceWalk(this.engine, this.inspector, this.options.keysPerRefresh, this.options.locksPerRefresh);
    this.contention = new ContentionHistory(this.engine);
    this.filters = new BoardFilters(this.engine.options.maxNameLength);
  }

  /** Checks a filter before any Redis work (a bad one is the caller's 400: a `TypeError`). */
  parseMatch(match: string | undefined): void {
    if (match !== undefined && match !== '') BoardFilters.parse(match, this.engine.options.maxNameLength);
  }

  async snapshot(match: string | undefined): Promise<BoardSnapshot> {
    const text = match === undefined || match === '' ? null : match;
    if (text !== null) this.filters.ask(text, Date.now());
    let reading = await this.reading();
    // A filter new to the latest reading: the next refresh (not sooner than refreshMs) works for it
    // (twice: a refresh already under way when it was asked for does not).
    for (let tries = 0; tries < 2 && text !== null && !reading.walk.views.has(text); tries++) {
      this.filters.ask(text, Date.now());
      reading = await this.reading(true);
    }
    return this.view(reading, text);
  }

  private async reading(needNext = false): Promise<Reading> {
    const { latest } = this;
    if (!needNext && latest && Date.now() - latest.at < this.options.refreshMs) return latest;
    if (!this.inFlight) {
      const wait = latest ? Math.max(0, latest.at + this.options.refreshMs - Date.now()) : 0;
      this.inFlight = new Promise((resolve) => setTimeout(resolve, wait))
        .then(() => this.refresh())
        .finally(() => (this.inFlight = undefined));
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
    const filters = this.filters.active(Date.now() - FILTER_MEMORY_REFRESHES * this.options.refreshMs);
    const budget = new MatchBudget();
    const walk = await this.walk.refresh(filters, budget);
    const live = await this.inspector.liveInstances({ count: 100 });
    await this.contention.update(
      live.instances.map((instance) => instance.clientId),
      live.serverTime,
    );
    const contention = new Map<string | null, readonly BoardContention[]>([[null, this.contention.view(undefined, budget)]]);
    for (const filter of filters) contention.set(filter.text, this.contention.view(filter, budget));
    this.lastError = undefined;
    this.latest = { at: Date.now(), serverTime: live.serverTime, walk, instances: live.instances, instancesMore: live.more, contention };
    return this.latest;
  }

  private view(reading: Reading, text: string | null): BoardSnapshot {
    const { walk } = reading;
    const view = walk.views.get(text);
    const messages: string[] = [];
    if (!walk.complete) messages.push(BOARD_WALK_PARTIAL(walk.keysScanned, walk.keyspaceSize));
    if (!view) messages.push(BOARD_FILTER_WAITING);
    else {
      if (view.hidden > 0) messages.push(BOARD_WALK_TRUNCATED(view.shown.length, view.shown.length + view.hidden));
      if (view.unchecked > 0) messages.push(BOARD_FILTER_UNCHECKED(view.unchecked));
    }
    if (walk.namesFull) messages.push(BOARD_WALK_NAMES_FULL(MAX_KNOWN_NAMES));
    const shown = view?.shown ?? [];
    return {
      serverTime: reading.serverTime,
      refreshMs: this.options.refreshMs,
      forceRelease: this.options.allowForceRelease,
      match: text,
      walk: {
        complete: walk.complete,
        keysScanned: walk.keysScanned,
        locksInspected: walk.inspections,
        truncated: (view?.hidden ?? 0) > 0,
        budget: { keysPerRefresh: this.options.keysPerRefresh, locksPerRefresh: this.options.locksPerRefresh },
        ...(messages.length > 0 ? { message: messages.join(' ') } : {}),
      },
      locks: shown.filter((info) => info.kind !== 'semaphore'),
      semaphores: shown.filter((info) => info.kind === 'semaphore'),
      instances: reading.instances,
      instancesMore: reading.instancesMore,
      contention: reading.contention.get(text) ?? [],
      ...(this.lastError ? { error: this.lastError } : {}),
    };
  }
}
