/**
 * Call chains and cycle parties for the randomized deadlock specs (test/deadlocks/randomized-*.spec.ts),
 * shared by this process and the child (test/fixtures/deadlock-random-chains.ts), so a chain or a party
 * runs the same way wherever it is placed.
 *
 * A chain is a tree of locked calls (`LockPart`): each body may sleep, yield, re-enter a lock its
 * path holds, nest the next lock, or fork branches (Promise.all) that each go on with locks of their
 * own. Along every path the locks are taken strictly in one global order (names sort: equal length),
 * semaphores last (their names sort after every lock's), never more permits than the semaphore has,
 * and a semaphore is never re-entered: no wait of such a chain can be part of a cycle.
 *
 * Witnesses, in Redis (shared by every process): an occupancy count per lock checked as a body
 * enters (one exclusive holder, no writer beside a reader, at most `permits` permits), and a
 * lost-update counter per exclusive lock (GET, an await, SET + 1) whose final value must equal the
 * increments every process made.
 */
import { performance } from 'node:perf_hooks';
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockDeadlockError, LockService, ReadWriteLockService, SemaphoreService } from '../../lib';
import { CrossProcessDeadlocks } from '../../lib/deadlocks/cross-process-check';
import { WaitForGraph, waitForGraph } from '../../lib/deadlocks/wait-for-graph';
import type { HeldLock } from '../../lib/runtime/held-locks';
import { innermostFrame } from '../../lib/runtime/owner-context';

export const CHAIN_WAIT_TIME = 30_000;

/** A lock a chain may take: its name (without the run's prefix) and its kind of resource. */
export interface Resource {
  readonly name: string;
  readonly type: 'lock' | 'rw' | 'sem';
  readonly permits?: number;
}

export type UseKind = 'plain' | 'fair' | 'read' | 'write' | 'sem' | 'multi';

/** One locked call: `names` has several names only for a multi-lock. */
export interface LockUse {
  readonly kind: UseKind;
  readonly names: readonly string[];
  readonly take?: number;
  readonly permits?: number;
}

export type Part =
  | { readonly t: 'sleep'; readonly ms: number }
  | { readonly t: 'tick' }
  | {
      readonly t: 'lock';
      readonly use: LockUse;
      readonly reentry: boolean;
      readonly rmw: boolean;
      /** Taken through the process's other module instance (when it has two): the chain spans both. */
      readonly hop?: boolean;
      readonly body: readonly Part[];
    }
  | { readonly t: 'all'; readonly branches: ReadonlyArray<readonly Part[]> };

export interface ChainPlan {
  readonly id: string;
  /** Which module instance of its process runs it. */
  readonly instance: number;
  readonly startMs: number;
  /** The parts run this many times in a row (a chain that comes back keeps the contention up). */
  readonly rounds?: number;
  readonly parts: readonly Part[];
}

export interface ErrorInfo {
  readonly name: string;
  readonly message: string;
  readonly deadlock: boolean;
  readonly cycle?: ReadonlyArray<{ lock: string; owner: string; inLine?: boolean }>;
  readonly lockName?: readonly string[];
}

export interface ChainResult {
  readonly id: string;
  readonly error?: ErrorInfo;
  /** Bodies entered (re-entries included). */
  acquisitions: number;
  /** Acquisitions that were not immediate (over 5 ms) / lasted past deadlockCheckAfter / of those, with the chain holding a lock. */
  waits: number;
  longWaits: number;
  nestedLongWaits: number;
  maxWaitMs: number;
  /** Lost-update counter increments, by prefixed lock name. */
  readonly increments: Record<string, number>;
  readonly violations: string[];
}

export const describeError = (error: unknown): ErrorInfo => {
  if (error instanceof LockDeadlockError) {
    return {
      name: error.name,
      message: error.message,
      deadlock: true,
      cycle: error.cycle.map(({ lock, owner, inLine }) => ({ lock, owner, ...(inLine ? { inLine } : {}) })),
      lockName: [...error.lockName],
    };
  }
  const e = error as Error;
  return { name: e?.name ?? typeof error, message: e?.message ?? String(error), deadlock: false };
};

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Small deterministic PRNG (mulberry32): a chain's shape follows from its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const pickOne = <T>(rng: () => number, items: readonly T[]): T => items[Math.floor(rng() * items.length)];
const int = (rng: () => number, min: number, max: number): number => min + Math.floor(rng() * (max - min + 1));

/** `k` distinct resources of `from` (already in global order), in global order. */
function pickSorted(rng: () => number, from: readonly Resource[], k: number): Resource[] {
  const pool = [...from];
  const picked: Resource[] = [];
  while (picked.length < k && pool.length > 0) picked.push(pool.splice(Math.floor(rng() * pool.length), 1)[0]);
  return picked.sort((a, b) => (a.name < b.name ? -1 : 1));
}

/** What a body's path holds: a name and how (a re-entry must not upgrade a read, nor re-enter permits). */
interface Held {
  readonly name: string;
  readonly kind: UseKind;
  /** Through which instance: a re-entry must go through the same one (another instance's hold is another owner's). */
  readonly hop: boolean;
}

/**
 * A chain of 1-3 distinct locks over `resources` (sorted: global order), re-entries, branches and
 * multi-locks drawn from `seed`.
 */
export function generateChain(seed: number, resources: readonly Resource[]): Part[] {
  const rng = prng(seed);
  const sorted = [...resources].sort((a, b) => (a.name < b.name ? -1 : 1));
  const filler = (): Part[] => {
    const parts: Part[] = [];
    for (let i = int(rng, 0, 2); i > 0; i--) parts.push(rng() < 0.4 ? { t: 'tick' } : { t: 'sleep', ms: rng() < 0.8 ? int(rng, 0, 25) : int(rng, 30, 90) });
    return parts;
  };
  const reentryOf = (path: readonly Held[]): Part | undefined => {
    const candidates = path.filter((h) => h.kind !== 'sem');
    if (candidates.length === 0) return undefined;
    const held = pickOne(rng, candidates);
    let kind: UseKind = held.kind;
    if (kind === 'write' && rng() < 0.5) kind = 'read'; // a read inside a write
    if (kind === 'multi') kind = 'plain';
    return { t: 'lock', use: { kind, names: [held.name] }, reentry: true, rmw: false, hop: held.hop, body: filler() };
  };
  const lockPart = (names: readonly Resource[], path: readonly Held[]): Part => {
    const [first, ...rest0] = names;
    let rest = rest0;
    let use: LockUse;
    if (first.type === 'lock') {
      if (rest[0]?.type === 'lock' && rng() < 0.3) {
        use = { kind: 'multi', names: [first.name, rest[0].name] };
        rest = rest.slice(1);
      } else {
        use = { kind: rng() < 0.5 ? 'plain' : 'fair', names: [first.name] };
      }
    } else if (first.type === 'rw') {
      use = { kind: rng() < 0.5 ? 'read' : 'write', names: [first.name] };
    } else {
      const permits = first.permits ?? 1;
      use = { kind: 'sem', names: [first.name], take: int(rng, 1, permits), permits };
    }
    const hop = rng() < 0.25;
    const inner: Held[] = [...path, ...use.names.map((name) => ({ name, kind: use.kind === 'multi' ? ('plain' as const) : use.kind, hop }))];
    const body: Part[] = filler();
    if (rest.length > 0) {
      if (rng() < 0.35) {
        // Two branches, each going on with locks after this one (the same lock in both: they exclude each other).
        const left = rest.filter(() => rng() < 0.6);
        const right = rest.filter(() => rng() < 0.6);
        const branch = (names: readonly Resource[]): Part[] => {
          if (names.length > 0) return [...filler(), lockPart(names, inner)];
          const again = rng() < 0.5 ? reentryOf(inner) : undefined;
          return again ? [again] : filler();
        };
        body.push({ t: 'all', branches: [branch(left.length + right.length === 0 ? rest : left), branch(right)] });
      } else {
        body.push(lockPart(rest, inner));
      }
    } else if (rng() < 0.25) {
      const a = reentryOf(inner);
      const b = reentryOf(inner);
      if (a && b) body.push({ t: 'all', branches: [[a], [b]] });
    }
    if (rng() < 0.3) {
      const again = reentryOf(inner);
      if (again) body.push(again);
    }
    body.push(...filler());
    const exclusive = use.kind === 'plain' || use.kind === 'fair' || use.kind === 'write' || use.kind === 'multi';
    return { t: 'lock', use, reentry: false, rmw: exclusive && rng() < 0.8, hop, body };
  };
  const root = (): Part[] => {
    // Mostly nested (2-3 locks): a nested wait is what runs the cross-process check.
    const parts: Part[] = [lockPart(pickSorted(rng, sorted, rng() < 0.15 ? 1 : rng() < 0.45 ? 2 : 3), [])];
    if (rng() < 0.25) parts.push(...filler(), lockPart(pickSorted(rng, sorted, int(rng, 1, 2)), []));
    return parts;
  };
  if (rng() < 0.2) return [{ t: 'all', branches: [root(), root()] }];
  return root();
}

/** Acquisitions (re-entries included) a chain's parts make. */
export function countLocks(parts: readonly Part[]): number {
  let n = 0;
  for (const part of parts) {
    if (part.t === 'lock') n += 1 + countLocks(part.body);
    if (part.t === 'all') for (const branch of part.branches) n += countLocks(branch);
  }
  return n;
}

/** A compact one-line picture of a chain: `plain(n0)[ write(n1){...} | ... ]`. */
export function describeParts(parts: readonly Part[]): string {
  return parts
    .map((part) => {
      if (part.t === 'sleep') return `~${part.ms}`;
      if (part.t === 'tick') return '.';
      if (part.t === 'all') return `all(${part.branches.map(describeParts).join(' | ')})`;
      const take = part.use.kind === 'sem' ? `:${part.use.take}/${part.use.permits}` : '';
      return `${part.reentry ? 're-' : ''}${part.hop ? '^' : ''}${part.use.kind}(${part.use.names.join(',')}${take})${part.rmw ? '!' : ''}{${describeParts(part.body)}}`;
    })
    .join(' ');
}

type Body = () => Promise<unknown>;

/** Runs `use` through its public service. */
export function runUse(app: TestingModule, use: LockUse, prefix: string, body: Body, waitTime = CHAIN_WAIT_TIME): Promise<unknown> {
  const names = use.names.map((n) => prefix + n);
  switch (use.kind) {
    case 'plain':
      return app.get(LockService).run(names[0], body, { waitTime });
    case 'multi':
      return app.get(LockService).run(names, body, { waitTime });
    case 'fair':
      return app.get(FairLockService).run(names[0], body, { waitTime });
    case 'read':
      return app.get(ReadWriteLockService).runRead(names[0], body, { waitTime });
    case 'write':
      return app.get(ReadWriteLockService).runWrite(names[0], body, { waitTime });
    case 'sem':
      return app.get(SemaphoreService).run(names[0], body, { permits: use.permits ?? 1, take: use.take ?? 1, waitTime });
  }
}

/** Witness keys of one prefixed lock name. */
const occKey = (name: string) => `dlw:occ:${name}`;
const readKey = (name: string) => `dlw:read:${name}`;
export const counterKey = (name: string) => `dlw:cnt:${name}`;

/** Enters the occupancy witness for `use` (not for a re-entry): returns the exit, and pushes a violation if broken. */
async function enterWitness(redis: Redis, use: LockUse, prefix: string, who: string, violations: string[]): Promise<() => Promise<void>> {
  const names = use.names.map((n) => prefix + n);
  if (use.kind === 'sem') {
    const [name] = names;
    const inside = await redis.incrby(occKey(name), use.take ?? 1);
    if (inside > (use.permits ?? 1)) violations.push(`${who}: ${inside} permits of ${name} (limit ${use.permits}) taken at once`);
    return async () => void (await redis.decrby(occKey(name), use.take ?? 1));
  }
  if (use.kind === 'read') {
    const [name] = names;
    const reply = (await redis.multi().incr(readKey(name)).get(occKey(name)).exec()) ?? [];
    const writers = Number(reply[1]?.[1] ?? 0);
    if (writers !== 0) violations.push(`${who}: read of ${name} entered beside ${writers} writer(s)`);
    return async () => void (await redis.decr(readKey(name)));
  }
  const exits: Array<() => Promise<void>> = [];
  for (const name of names) {
    const reply = (await redis.multi().incr(occKey(name)).get(readKey(name)).exec()) ?? [];
    const holders = Number(reply[0]?.[1] ?? 0);
    const readers = Number(reply[1]?.[1] ?? 0);
    if (holders !== 1 || (use.kind === 'write' && readers !== 0)) violations.push(`${who}: ${use.kind} of ${name} entered with ${holders - 1} other holder(s) and ${readers} reader(s) inside`);
    exits.push(async () => void (await redis.decr(occKey(name))));
  }
  return async () => void (await Promise.all(exits.map((exit) => exit())));
}

export interface ChainEnv {
  readonly apps: readonly TestingModule[];
  readonly redis: Redis;
  readonly prefix: string;
  readonly deadlockCheckAfter: number;
}

/** Runs one chain; never throws (its error, if any, is in the result). */
export async function runChain(env: ChainEnv, plan: ChainPlan): Promise<ChainResult> {
  const result: ChainResult = { id: plan.id, acquisitions: 0, waits: 0, longWaits: 0, nestedLongWaits: 0, maxWaitMs: 0, increments: {}, violations: [] };
  const base = plan.instance < env.apps.length ? plan.instance : 0;
  const appOf = (hop: boolean | undefined) => env.apps[hop ? (base + 1) % env.apps.length : base];
  const { redis, prefix } = env;
  const runParts = async (parts: readonly Part[], depth: number): Promise<void> => {
    for (const part of parts) await runPart(part, depth);
  };
  const runPart = async (part: Part, depth: number): Promise<void> => {
    switch (part.t) {
      case 'sleep':
        return sleep(part.ms);
      case 'tick':
        return tick();
      case 'all': {
        const settled = await Promise.allSettled(part.branches.map((branch) => runParts(branch, depth)));
        const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
        if (failed) throw failed.reason;
        return;
      }
      case 'lock': {
        const asked = performance.now();
        await runUse(appOf(part.hop), part.use, prefix, async () => {
          const waited = performance.now() - asked;
          result.acquisitions += 1;
          if (waited > 5) result.waits += 1;
          if (waited > env.deadlockCheckAfter) {
            result.longWaits += 1;
            if (depth > 0) result.nestedLongWaits += 1;
          }
          result.maxWaitMs = Math.max(result.maxWaitMs, Math.round(waited));
          const who = `${plan.id} ${part.use.kind}(${part.use.names.join(',')})`;
          const exit = part.reentry ? undefined : await enterWitness(redis, part.use, prefix, who, result.violations);
          try {
            if (part.rmw) {
              for (const name of part.use.names.map((n) => prefix + n)) {
                const value = Number((await redis.get(counterKey(name))) ?? 0);
                await (value % 2 === 0 ? tick() : sleep(1));
                await redis.set(counterKey(name), String(value + 1));
                result.increments[name] = (result.increments[name] ?? 0) + 1;
              }
            }
            await runParts(part.body, depth + 1);
          } finally {
            await exit?.();
          }
        });
        return;
      }
    }
  };
  await sleep(plan.startMs);
  try {
    for (let round = 0; round < (plan.rounds ?? 1); round++) await runParts(plan.parts, 0);
  } catch (error) {
    (result as { error?: ErrorInfo }).error = describeError(error);
  }
  return result;
}

/** What the detector did in this process, counted by wrapping its methods (test-only). */
export interface DetectorCounters {
  /** Cross-process checks run (each: records written, a walk). */
  checks: number;
  /** Walks that found a cycle (the youngest refuses; older members only see it). */
  crossCycles: number;
  /** In-process walks that found a cycle. */
  localCycles: number;
  /** The first few cycles found, for the report: lock names of their steps. */
  seen: string[];
}

export const detector: DetectorCounters = { checks: 0, crossCycles: 0, localCycles: 0, seen: [] };
let counting = false;

/** Wraps the detector's check, walk and in-process search once, to count what they do. */
export function countDetector(): DetectorCounters {
  if (counting) return detector;
  counting = true;
  const cross = CrossProcessDeadlocks.prototype as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const check = cross.check;
  cross.check = function (this: unknown, ...args: unknown[]) {
    detector.checks += 1;
    return check.apply(this, args);
  };
  const walk = cross.walk;
  cross.walk = async function (this: unknown, ...args: unknown[]) {
    const found = (await walk.apply(this, args)) as { steps: Array<{ lock: string }> } | undefined;
    if (found) {
      detector.crossCycles += 1;
      if (detector.seen.length < 5) detector.seen.push(`cross: ${found.steps.map((s) => s.lock).join(' -> ')}`);
    }
    return found;
  };
  const graph = WaitForGraph.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const findCycle = graph.findCycle;
  graph.findCycle = function (this: unknown, ...args: unknown[]) {
    const found = findCycle.apply(this, args) as { steps: Array<{ lock: string }> } | undefined;
    if (found) {
      detector.localCycles += 1;
      if (detector.seen.length < 5) detector.seen.push(`local: ${found.steps.map((s) => s.lock).join(' -> ')}`);
    }
    return found;
  };
  return detector;
}

export function takeCounters(): DetectorCounters {
  const copy = { ...detector, seen: [...detector.seen] };
  detector.checks = 0;
  detector.crossCycles = 0;
  detector.localCycles = 0;
  detector.seen = [];
  return copy;
}

// ---------------------------------------------------------------------------------------------
// Cycle parties (randomized-injected.spec.ts)

/** One lock of an injected cycle as a party takes it. */
export interface EdgeUse {
  readonly kind: 'plain' | 'fair' | 'read' | 'write' | 'sem';
  readonly name: string;
  readonly take?: number;
  readonly permits?: number;
}

export const edgeToUse = (edge: EdgeUse): LockUse => ({ kind: edge.kind, names: [edge.name], take: edge.take, permits: edge.permits });

/** A party: holds `hold`, reports "holding", waits to be told, then asks for `next` inside the body. */
export interface PartyPlan {
  readonly id: string;
  readonly instance: number;
  readonly hold: EdgeUse;
  readonly next: EdgeUse;
}

/** A caller that holds nothing and waits in `lock`'s line (a writer ahead of a read, a waiter ahead in a line). */
export interface BystanderPlan {
  readonly id: string;
  readonly instance: number;
  readonly lock: EdgeUse;
}

export type PartyEvent =
  | { ev: 'holding'; id: string }
  | { ev: 'waiting'; id: string }
  | { ev: 'done'; id: string; error?: ErrorInfo };

/** Parties and bystanders of one process (this one, or the child's): events through `emit`. */
export class PartyHost {
  private readonly gates = new Map<string, () => void>();
  private readonly holds = new Map<string, readonly HeldLock[]>();
  private readonly ended = new Set<string>();

  constructor(
    private readonly apps: readonly TestingModule[],
    private readonly prefix: string,
    private readonly emit: (event: PartyEvent) => void,
  ) {}

  startParty(plan: PartyPlan): void {
    const app = this.apps[plan.instance] ?? this.apps[0];
    const told = new Promise<void>((resolve) => this.gates.set(plan.id, resolve));
    runUse(app, edgeToUse(plan.hold), this.prefix, async () => {
      this.holds.set(plan.id, innermostFrame()?.holds ?? []);
      this.emit({ ev: 'holding', id: plan.id });
      await told;
      void this.reportWaiting(plan.id);
      await runUse(app, edgeToUse(plan.next), this.prefix, () => sleep(5));
      await sleep(5);
    }).then(
      () => this.end({ ev: 'done', id: plan.id }),
      (error: unknown) => this.end({ ev: 'done', id: plan.id, error: describeError(error) }),
    );
  }

  private end(event: PartyEvent): void {
    this.ended.add(event.id);
    this.emit(event);
  }

  /** Tells the party to ask for its next lock. */
  ask(id: string): void {
    this.gates.get(id)?.();
  }

  /** Reports "waiting" once the party's wait is in this process's wait-for graph (registered at its first miss). */
  private async reportWaiting(id: string): Promise<void> {
    const holds = this.holds.get(id) ?? [];
    const byHold = (waitForGraph as unknown as { waitsByHold: Map<HeldLock, Set<unknown>> }).waitsByHold;
    const end = Date.now() + 30_000;
    while (Date.now() < end && !this.ended.has(id)) {
      if (holds.some((hold) => (byHold.get(hold)?.size ?? 0) > 0)) return this.emit({ ev: 'waiting', id });
      await sleep(2);
    }
  }

  startBystander(plan: BystanderPlan): void {
    const app = this.apps[plan.instance] ?? this.apps[0];
    runUse(app, edgeToUse(plan.lock), this.prefix, () => sleep(5)).then(
      () => this.emit({ ev: 'done', id: plan.id }),
      (error: unknown) => this.emit({ ev: 'done', id: plan.id, error: describeError(error) }),
    );
  }
}
