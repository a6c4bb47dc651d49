/**
 * What the hold-handle specs (test/hold-model/hold-handles*.spec.ts, issue 41, DESIGN §24) share:
 * the exclusive kinds they run on (a lock object and `run` of one name), module instances on one
 * engine, the two ways a hold is lost behind its holder's back, and small outcome helpers so a
 * failure prints every observation at once rather than the first one that differed.
 */
import type { TestingModule } from '@nestjs/testing';
import type { Lock, LockModuleOptions, LockRunContext, WaitingRunOptions } from '../../lib';
import { fairKind, reentrantKind, writeKind } from './contract-kinds';
import type { EngineHandle } from './lock-contract';
import { waitFor } from './wait-for';

/** One exclusive kind: its lock object (`getLock`, or a write view), its `run`, and the keys that are its state. */
export interface HandleKind {
  readonly kind: 'plain' | 'fair' | 'write';
  make(app: TestingModule, name: string): Lock;
  run<T>(app: TestingModule, name: string, fn: (context: LockRunContext) => Promise<T>, options?: WaitingRunOptions): Promise<T>;
  /** Deleting these loses the lock (the write lock keeps its readers' leases beside its hash). */
  stateKeys(name: string): string[];
}

export const PLAIN: HandleKind = { ...reentrantKind, kind: 'plain' };
export const FAIR: HandleKind = { ...fairKind, kind: 'fair' };
export const WRITE: HandleKind = { ...writeKind, kind: 'write' };

/**
 * How a hold ends in Redis behind its holder: `del` (a flush, an operator's DEL: the holder's module
 * learns it at its next renewal at the earliest), `forceUnlock` (an operator on another instance).
 */
export type Loss = 'del' | 'forceUnlock';

export async function loseHold(engine: EngineHandle, operator: TestingModule, kind: HandleKind, name: string, how: Loss): Promise<void> {
  if (how === 'forceUnlock') {
    if (!(await kind.make(operator, name).forceUnlock())) throw new Error(`forceUnlock found ${name} free: the test's hold was not there`);
    return;
  }
  let deleted = 0;
  for (const key of kind.stateKeys(name)) deleted += await engine.del(key);
  if (deleted === 0) throw new Error(`DEL found nothing of ${name}: the test's hold was not there`);
}

/** Module instances on one engine (each another process, as far as Redis can tell), closed together. */
export async function startApps(engine: EngineHandle, count: number, options: Omit<LockModuleOptions, 'redis'>): Promise<TestingModule[]> {
  const apps: TestingModule[] = [];
  for (let i = 0; i < count; i++) apps.push(await engine.createApp({ redis: engine.url, ...options }));
  return apps;
}

/** How a promise settled, as a value: 'resolved', `resolved:<value>`, or the rejection's class name. */
export function settled(promise: Promise<unknown>, withValue = false): Promise<string> {
  return promise.then(
    (value) => (withValue ? `resolved:${String(value)}` : 'resolved'),
    (error: unknown) => (error instanceof Error ? error.constructor.name : String(error)),
  );
}

/** Waits (bounded: a hang, not a pace) until `signal` aborted. */
export function aborted(signal: AbortSignal, what: string, timeoutMs = 10_000): Promise<void> {
  return waitFor(() => signal.aborted, { what, timeoutMs });
}
