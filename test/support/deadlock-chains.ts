import type { INestApplicationContext } from '@nestjs/common';
import type Redis from 'ioredis';
import {
  FairLockService,
  LockDeadlockError,
  LockError,
  LockService,
  ReadWriteLockService,
  SemaphoreService,
  type Lock,
  type LockRunContext,
} from '../../lib';

/**
 * Scripted call chains for the deadlock scenarios (test/deadlocks/): a chain is a list of steps,
 * each a lock taken inside the body of the one before. The same runner drives chains in the test's
 * own process and in child processes (test/fixtures/deadlock-party.ts), and reports what happens as
 * events the test waits for, so a test never sleeps and hopes.
 */

export type StepKind = 'plain' | 'fair' | 'read' | 'write' | 'semaphore';

export interface ChainStep {
  readonly kind: StepKind;
  /** An array takes the names as one multi-lock (the service's run with an array). */
  readonly name: string | readonly string[];
  /** A semaphore's limit. */
  readonly permits?: number;
  /** Permits taken by a semaphore step (default 1). */
  readonly take?: number;
  /**
   * 'run' (default): the service's run (or runRead/runWrite), which takes the chain's owner.
   * 'object': a lock object made when the chain starts, outside any body, so another owner
   * (`tryLock`/`tryAcquire` with the step's waitTime inside the body of the step before).
   */
  readonly via?: 'run' | 'object';
  /** Which module instance of the party runs the step (default 0). */
  readonly app?: number;
  /** Default 20 s: long enough that a timeout is a failure, never a pass. */
  readonly waitTime?: number;
}

export interface ChainSpec {
  readonly id: string;
  readonly steps: readonly ChainStep[];
  /** Steps that begin without a `next` (default: only step 0). */
  readonly auto?: readonly number[];
  /** The innermost body waits for `next(id, steps.length)` before it returns (keeps every lock). */
  readonly holdInnermost?: boolean;
  /** A body catches a `LockDeadlockError` of the step it nests (and then ends normally). */
  readonly catchNested?: boolean;
  /** Prefix of the counters each exclusive body increments (read, modify, write). */
  readonly counterPrefix: string;
  /** Pause between the counter's read and write (default 20 ms). */
  readonly rmwMs?: number;
}

export interface ErrorInfo {
  readonly name: string;
  readonly message: string;
  readonly isDeadlock: boolean;
  readonly isLockError: boolean;
  readonly cycle?: ReadonlyArray<{ lock: string; owner: string; inLine?: boolean; instance?: { host: string; pid: number; clientName?: string } }>;
  readonly lockName?: string | readonly string[];
  readonly statusCode?: number;
  readonly extensions?: { code?: string; statusCode?: number; lockName?: unknown };
}

export type ChainEvent =
  | { ev: 'waiting'; chain: string; step: number; at: number; pid: number }
  | { ev: 'held'; chain: string; step: number; at: number; pid: number }
  | { ev: 'refused'; chain: string; step: number; at: number; pid: number; error: ErrorInfo; caught: boolean }
  | { ev: 'done'; chain: string; at: number; pid: number; outcome: 'ok' | 'error'; error?: ErrorInfo; bodies: Record<string, number>; counted: Record<string, number> };

export interface ChainControl {
  /** Resolves when the test says the chain may go on to `step`. */
  gate(chain: string, step: number): Promise<void>;
  emit(event: ChainEvent): void;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function errorInfo(error: unknown): ErrorInfo {
  const e = error as Record<string, unknown> & Error;
  const info: ErrorInfo = {
    name: e?.name ?? typeof error,
    message: e?.message ?? String(error),
    isDeadlock: error instanceof LockDeadlockError,
    isLockError: error instanceof LockError,
  };
  if (error instanceof LockDeadlockError) {
    return {
      ...info,
      cycle: error.cycle.map((step) => ({ ...step, ...(step.instance ? { instance: { ...step.instance } } : {}) })),
      lockName: error.lockName,
      statusCode: error.statusCode,
      extensions: { ...error.extensions },
    };
  }
  return { ...info, ...(e && 'lockName' in e ? { lockName: e.lockName as string } : {}) };
}

/** An exclusive body may check mutual exclusion with a read-modify-write of a counter per name. */
function exclusive(step: ChainStep): boolean {
  if (step.kind === 'plain' || step.kind === 'fair' || step.kind === 'write') return true;
  return step.kind === 'semaphore' && (step.take ?? 1) === step.permits;
}

export const counterKey = (prefix: string, name: string) => `counter:${prefix}:${name}`;

/** Made before the chain's first step, outside any body: each owns itself. */
interface PreparedObject {
  acquire(waitTime: number): Promise<boolean>;
  release(): Promise<void>;
}

function prepareObject(app: INestApplicationContext, step: ChainStep): PreparedObject {
  if (typeof step.name !== 'string') throw new Error('an object step takes one name');
  const name = step.name;
  if (step.kind === 'semaphore') {
    const semaphore = app.get(SemaphoreService).getSemaphore(name, { permits: step.permits ?? 1 });
    let permit: { release(): Promise<void> } | null = null;
    return {
      async acquire(waitTime) {
        permit = await semaphore.tryAcquire({ take: step.take ?? 1, waitTime });
        return permit !== null;
      },
      release: () => (permit as { release(): Promise<void> }).release(),
    };
  }
  let lock: Lock;
  if (step.kind === 'plain') lock = app.get(LockService).getLock(name);
  else if (step.kind === 'fair') lock = app.get(FairLockService).getLock(name);
  else {
    const rw = app.get(ReadWriteLockService).getReadWriteLock(name);
    lock = step.kind === 'read' ? rw.readLock() : rw.writeLock();
  }
  return { acquire: (waitTime) => lock.tryLock({ waitTime }), release: () => lock.unlock() };
}

function runStep<T>(app: INestApplicationContext, step: ChainStep, fn: (context: LockRunContext) => Promise<T>): Promise<T> {
  const options = { waitTime: step.waitTime ?? 20_000 };
  switch (step.kind) {
    case 'plain':
      return app.get(LockService).run(step.name, fn, options);
    case 'fair':
      return app.get(FairLockService).run(step.name, fn, options);
    case 'read':
      return app.get(ReadWriteLockService).runRead(step.name, fn, options);
    case 'write':
      return app.get(ReadWriteLockService).runWrite(step.name, fn, options);
    case 'semaphore':
      if (typeof step.name !== 'string') throw new Error('a semaphore step takes one name');
      return app.get(SemaphoreService).run(step.name, fn, { ...options, permits: step.permits ?? 1, take: step.take ?? 1 });
  }
}

/** The step's lock taken through a lock object (another owner), its body run, the lock released. */
async function objectStep<T>(object: PreparedObject, step: ChainStep, fn: () => Promise<T>): Promise<T> {
  const waitTime = step.waitTime ?? 20_000;
  if (!(await object.acquire(waitTime))) throw new Error(`tryLock of ${String(step.name)} gave false after ${waitTime} ms`);
  try {
    return await fn();
  } finally {
    await object.release();
  }
}

/**
 * Runs one chain to its end: step 0, then (inside its body, once `gate` says so) step 1, and so
 * on. Never rejects: the outcome is the 'done' event (and the returned one).
 */
export async function runChain(
  apps: readonly INestApplicationContext[],
  raw: Redis,
  spec: ChainSpec,
  control: ChainControl,
): Promise<ChainEvent & { ev: 'done' }> {
  const { pid } = process;
  const bodies: Record<string, number> = {};
  /** Bodies that incremented each name's counter (the exclusive ones). */
  const counted: Record<string, number> = {};
  const emit = control.emit;
  const objects = spec.steps.map((step) => (step.via === 'object' ? prepareObject(apps[step.app ?? 0], step) : undefined));

  const bodyOf = (i: number) => async (): Promise<void> => {
    const step = spec.steps[i];
    emit({ ev: 'held', chain: spec.id, step: i, at: Date.now(), pid });
    const names = typeof step.name === 'string' ? [step.name] : [...step.name];
    for (const name of names) bodies[name] = (bodies[name] ?? 0) + 1;
    if (exclusive(step)) {
      for (const name of names) {
        counted[name] = (counted[name] ?? 0) + 1;
        const key = counterKey(spec.counterPrefix, name);
        const value = Number((await raw.get(key)) ?? 0);
        await sleep(spec.rmwMs ?? 20);
        await raw.set(key, value + 1);
      }
    }
    if (i + 1 < spec.steps.length) {
      try {
        await stepAt(i + 1);
      } catch (error) {
        if (!(spec.catchNested && error instanceof LockDeadlockError)) throw error;
      }
    } else if (spec.holdInnermost) {
      await control.gate(spec.id, spec.steps.length);
    }
  };

  const stepAt = async (i: number): Promise<void> => {
    if (i > 0 && !(spec.auto ?? []).includes(i)) await control.gate(spec.id, i);
    const step = spec.steps[i];
    let entered = false;
    const body = bodyOf(i);
    const entering = async () => {
      entered = true;
      await body();
    };
    emit({ ev: 'waiting', chain: spec.id, step: i, at: Date.now(), pid });
    try {
      const object = objects[i];
      if (object) await objectStep(object, step, entering);
      else await runStep(apps[step.app ?? 0], step, entering);
    } catch (error) {
      if (!entered) {
        const caught = i > 0 && !!spec.catchNested && error instanceof LockDeadlockError;
        emit({ ev: 'refused', chain: spec.id, step: i, at: Date.now(), pid, error: errorInfo(error), caught });
      }
      throw error;
    }
  };

  let done: ChainEvent & { ev: 'done' };
  try {
    await stepAt(0);
    done = { ev: 'done', chain: spec.id, at: Date.now(), pid, outcome: 'ok', bodies, counted };
  } catch (error) {
    done = { ev: 'done', chain: spec.id, at: Date.now(), pid, outcome: 'error', error: errorInfo(error), bodies, counted };
  }
  emit(done);
  return done;
}

/** A step of a storm chain: one lock of the global order. */
export interface StormOptions {
  readonly chains: number;
  readonly iterations: number;
  readonly seed: number;
  readonly prefix: string;
  /** Longest pause inside a body, ms. */
  readonly maxBodyMs: number;
}

export interface StormResult {
  readonly deadlocks: ErrorInfo[];
  readonly errors: ErrorInfo[];
  readonly bodies: Record<string, number>;
  readonly counted: Record<string, number>;
  readonly rounds: number;
}

/** The global order every storm chain takes its locks in: a plain, a fair, a read-write, a semaphore. */
export const STORM_ORDER: readonly StepKind[] = ['plain', 'fair', 'write', 'semaphore'];

function random(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 0x1_0000_0000;
  };
}

/**
 * Many chains, each round a random non-empty subset of the global order's locks taken nested in
 * that order (the read-write one in a random mode): heavy contention, no cycle possible.
 */
export async function storm(apps: readonly INestApplicationContext[], raw: Redis, options: StormOptions): Promise<StormResult> {
  const next = random(options.seed);
  const deadlocks: ErrorInfo[] = [];
  const errors: ErrorInfo[] = [];
  const bodies: Record<string, number> = {};
  const counted: Record<string, number> = {};
  let rounds = 0;
  const name = (kind: StepKind) =>
    `${options.prefix}:${kind === 'plain' ? 'a' : kind === 'fair' ? 'f' : kind === 'semaphore' ? 's' : 'c'}`;
  const chain = async (c: number) => {
    for (let round = 0; round < options.iterations; round++) {
      const steps: ChainStep[] = [];
      for (const kind of STORM_ORDER) {
        if (next() < 0.6) {
          const k: StepKind = kind === 'write' && next() < 0.5 ? 'read' : kind;
          steps.push({ kind: k, name: name(kind), permits: kind === 'semaphore' ? 2 : undefined, take: 1, app: c % apps.length });
        }
      }
      if (steps.length === 0) steps.push({ kind: 'plain', name: name('plain') });
      const bodyMs = Math.floor(next() * options.maxBodyMs);
      const spec: ChainSpec = {
        id: `storm-${c}-${round}`,
        steps,
        auto: steps.map((_, i) => i),
        counterPrefix: options.prefix,
        rmwMs: bodyMs,
      };
      const done = await runChain(apps, raw, spec, { gate: async () => undefined, emit: () => undefined });
      rounds++;
      for (const [n, count] of Object.entries(done.bodies)) bodies[n] = (bodies[n] ?? 0) + count;
      for (const [n, count] of Object.entries(done.counted)) counted[n] = (counted[n] ?? 0) + count;
      if (done.error?.isDeadlock) deadlocks.push(done.error);
      else if (done.error) errors.push(done.error);
    }
  };
  await Promise.all(Array.from({ length: options.chains }, (_, c) => chain(c)));
  return { deadlocks, errors, bodies, counted, rounds };
}
