import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { INestApplicationContext } from '@nestjs/common';
import type Redis from 'ioredis';
import { FairLockService, LockService, ReadWriteLockService, SemaphoreService, type LockModuleOptions } from '../../lib';
import { counterKey, runChain, type ChainEvent, type ChainSpec, type ErrorInfo, type StormOptions, type StormResult, storm } from './deadlock-chains';
import { waitFor } from './wait-for';
import { TYPESCRIPT_CHILD_ARGS } from './child-process';

/**
 * A party of a deadlock scenario: a process (this one, or a child) running scripted call chains
 * (./deadlock-chains.ts). The test starts chains, lets each go on to its next step, and waits for
 * the events they report.
 */
export interface Party {
  readonly label: string;
  readonly pid: number;
  readonly events: readonly ChainEvent[];
  start(spec: ChainSpec): void;
  next(chain: string, step: number): void;
  close(): Promise<void>;
}

type Done = ChainEvent & { ev: 'done' };
type Refused = ChainEvent & { ev: 'refused' };

/** Chains in this process, on the test's module instance(s). */
export class LocalParty implements Party {
  readonly pid = process.pid;
  readonly events: ChainEvent[] = [];
  private readonly gates = new Map<string, () => void>();
  private readonly opened = new Set<string>();
  private readonly running: Promise<unknown>[] = [];

  constructor(
    readonly label: string,
    private readonly apps: readonly INestApplicationContext[],
    private readonly raw: Redis,
  ) {}

  start(spec: ChainSpec): void {
    this.running.push(
      runChain(this.apps, this.raw, spec, {
        gate: (chain, step) => {
          const key = `${chain} ${step}`;
          if (this.opened.has(key)) return Promise.resolve();
          return new Promise<void>((resolve) => this.gates.set(key, resolve));
        },
        emit: (event) => this.events.push(event),
      }),
    );
  }

  next(chain: string, step: number): void {
    const key = `${chain} ${step}`;
    this.opened.add(key);
    this.gates.get(key)?.();
  }

  async close(): Promise<void> {
    await Promise.all(this.running);
  }
}

/** Chains in a child process (test/fixtures/deadlock-party.ts) with its own module instance. */
export class ChildParty implements Party {
  readonly events: ChainEvent[] = [];
  private out = '';
  private err = '';
  private readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined;

  private constructor(
    readonly label: string,
    private readonly child: ChildProcess,
  ) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code) => {
        this.exitCode = code;
        resolve(code);
      }),
    );
    child.stderr?.on('data', (d) => (this.err += d));
    child.stdout?.on('data', (d) => {
      this.out += d;
      let newline: number;
      while ((newline = this.out.indexOf('\n')) !== -1) {
        const line = this.out.slice(0, newline);
        this.out = this.out.slice(newline + 1);
        if (line.startsWith('ev ')) this.events.push(JSON.parse(line.slice(3)) as ChainEvent);
        else if (line === 'ready') this.ready = true;
        else if (line.startsWith('storm ')) this.stormResult = JSON.parse(line.slice(6)) as StormResult;
      }
    });
  }

  ready = false;
  stormResult: StormResult | undefined;

  get pid(): number {
    return this.child.pid as number;
  }

  /** Spawns the party and resolves once its module instance is up. */
  static async spawn(label: string, redisUrl: string, options: Partial<LockModuleOptions> = {}, apps = 1): Promise<ChildParty> {
    const child = spawn(
      process.execPath,
      [...TYPESCRIPT_CHILD_ARGS, join(__dirname, '..', 'fixtures', 'deadlock-party.ts'), redisUrl, JSON.stringify(options), String(apps)],
      { env: process.env, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    const party = new ChildParty(label, child);
    await waitFor(
      () => {
        if (party.exitCode !== undefined) throw new Error(`party ${label} exited ${party.exitCode}: ${party.err}`);
        return party.ready;
      },
      { what: `party ${label} to start`, timeoutMs: 30_000 },
    );
    return party;
  }

  private send(command: object): void {
    this.child.stdin?.write(`${JSON.stringify(command)}\n`);
  }

  start(spec: ChainSpec): void {
    this.send({ cmd: 'start', spec });
  }

  next(chain: string, step: number): void {
    this.send({ cmd: 'next', chain, step });
  }

  /** Runs a storm (./deadlock-chains.ts) in the child; resolves with its result. */
  async storm(options: StormOptions, timeoutMs = 120_000): Promise<StormResult> {
    this.send({ cmd: 'storm', options });
    await waitFor(
      () => {
        if (this.exitCode !== undefined) throw new Error(`party ${this.label} exited ${this.exitCode}: ${this.err}`);
        return this.stormResult !== undefined;
      },
      { what: `party ${this.label}'s storm`, timeoutMs, stepMs: 50 },
    );
    return this.stormResult as StormResult;
  }

  /** Asks the child to close its module and exit; kills it when it does not within 10 s. */
  async close(): Promise<void> {
    if (this.exitCode !== undefined) return;
    this.send({ cmd: 'exit' });
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(timer);
  }

  stderr(): string {
    return this.err;
  }
}

/** Every event of every party, for the assertions and for failure messages. */
export function allEvents(parties: readonly Party[]): Array<ChainEvent & { party: string }> {
  return parties.flatMap((party) => party.events.map((event) => ({ ...event, party: party.label })));
}

/** Resolves with the first event of `party` matching, once it is reported. */
export async function eventOf<E extends ChainEvent['ev']>(
  party: Party,
  ev: E,
  chain: string,
  step?: number,
  timeoutMs = 30_000,
): Promise<ChainEvent & { ev: E }> {
  const find = () =>
    party.events.find((event) => event.ev === ev && event.chain === chain && (step === undefined || (event as { step?: number }).step === step)) as
      | (ChainEvent & { ev: E })
      | undefined;
  await waitFor(() => find() !== undefined, { what: `${party.label}: ${ev} of ${chain}${step === undefined ? '' : ` step ${step}`}`, timeoutMs });
  return find() as ChainEvent & { ev: E };
}

export const held = (party: Party, chain: string, step: number, timeoutMs?: number) => eventOf(party, 'held', chain, step, timeoutMs);
export const waiting = (party: Party, chain: string, step: number, timeoutMs?: number) => eventOf(party, 'waiting', chain, step, timeoutMs);
export const done = (party: Party, chain: string, timeoutMs?: number): Promise<Done> => eventOf(party, 'done', chain, undefined, timeoutMs);

/** The refusals reported by every party (a LockError or anything else that kept a step out). */
export function refusals(parties: readonly Party[]): Array<Refused & { party: string }> {
  return allEvents(parties).filter((event): event is Refused & { party: string } => event.ev === 'refused');
}

/** Every LockDeadlockError any party saw, wherever it surfaced (refused step or chain outcome). */
export function deadlockErrors(parties: readonly Party[]): ErrorInfo[] {
  return refusals(parties)
    .filter((event) => event.error.isDeadlock)
    .map((event) => event.error);
}

/** The counters the chains' exclusive bodies incremented equal the number of those bodies (no lost update). */
export async function expectCountersExact(raw: Redis, prefix: string, parties: readonly Party[], names: readonly string[]): Promise<void> {
  const counted: Record<string, number> = {};
  for (const event of allEvents(parties)) {
    if (event.ev !== 'done') continue;
    for (const [name, count] of Object.entries(event.counted)) counted[name] = (counted[name] ?? 0) + count;
  }
  for (const name of names) {
    expect({ name, counter: Number((await raw.get(counterKey(prefix, name))) ?? 0) }).toEqual({ name, counter: counted[name] ?? 0 });
  }
}

/** A readable account of the events so far, for a failing expectation's message. */
export function describeEvents(parties: readonly Party[]): string {
  return allEvents(parties)
    .map((event) => `${event.party} ${event.ev} ${event.chain}${'step' in event ? ` step ${event.step}` : ''}${'error' in event && event.error ? ` ${event.error.name}: ${event.error.message}` : ''}`)
    .join('\n');
}

/** Resolves once `name`'s line (plain, fair, read-write or semaphore) has at least `count` entries. */
export async function inLine(
  app: INestApplicationContext,
  kind: 'plain' | 'fair' | 'read-write' | 'semaphore',
  name: string,
  count = 1,
  timeoutMs = 15_000,
): Promise<void> {
  const look = async (): Promise<number> => {
    if (kind === 'semaphore') return (await app.get(SemaphoreService).inspect(name)).waiters.length;
    if (kind === 'read-write') return (await app.get(ReadWriteLockService).inspect(name)).waiters?.length ?? 0;
    if (kind === 'fair') return (await app.get(FairLockService).inspect(name)).waiters?.length ?? 0;
    return (await app.get(LockService).inspect(name)).waiters?.length ?? 0;
  };
  await waitFor(async () => (await look()) >= count, { what: `${count} waiter(s) in ${name}'s line`, timeoutMs });
}

/** The owner ids holding `name` now. */
export async function holders(app: INestApplicationContext, kind: 'plain' | 'fair' | 'read-write' | 'semaphore', name: string): Promise<string[]> {
  if (kind === 'semaphore') return (await app.get(SemaphoreService).inspect(name)).holders.map((h) => h.ownerId);
  if (kind === 'read-write') return (await app.get(ReadWriteLockService).inspect(name)).holders.map((h) => h.ownerId);
  if (kind === 'fair') return (await app.get(FairLockService).inspect(name)).holders.map((h) => h.ownerId);
  return (await app.get(LockService).inspect(name)).holders.map((h) => h.ownerId);
}

/** The owner ids waiting in `name`'s line now, first in line first. */
export async function waiters(app: INestApplicationContext, kind: 'plain' | 'fair' | 'read-write' | 'semaphore', name: string): Promise<string[]> {
  if (kind === 'semaphore') return (await app.get(SemaphoreService).inspect(name)).waiters.map((w) => w.ownerId);
  if (kind === 'read-write') return ((await app.get(ReadWriteLockService).inspect(name)).waiters ?? []).map((w) => w.ownerId);
  if (kind === 'fair') return ((await app.get(FairLockService).inspect(name)).waiters ?? []).map((w) => w.ownerId);
  return ((await app.get(LockService).inspect(name)).waiters ?? []).map((w) => w.ownerId);
}

export type Outcome = 'ok' | 'deadlock' | 'timeout' | string;

/** How each chain ended: 'ok', 'deadlock', 'timeout' (LockTimeoutError), else the error's name and message. */
export function outcomes(parties: readonly Party[]): Record<string, Outcome> {
  const result: Record<string, Outcome> = {};
  for (const event of allEvents(parties)) {
    if (event.ev !== 'done') continue;
    const error = event.error;
    result[event.chain] = !error ? 'ok' : error.isDeadlock ? 'deadlock' : error.name === 'LockTimeoutError' ? 'timeout' : `${error.name}: ${error.message}`;
  }
  return result;
}

export interface ExpectedDeadlock {
  /** `<party label> <chain> step <n>` of the refused wait. */
  readonly refused: string;
  /** The cycle's lock names (any order). */
  readonly locks: readonly string[];
  /** Step 1 of the cycle: the lock the refused wait waits for, and for whom. */
  readonly first?: { lock: string; owner?: string; inLine?: boolean };
  /** Owners of the refused call chain: the last step's owner is one of them. */
  readonly chainOwners?: readonly string[];
}

/**
 * Exactly one LockDeadlockError across all parties, on the expected wait, saying what the contract
 * says (409, CONFLICT, the cycle's locks, the first step, a last step in the refused chain). Returns it.
 */
export function expectTheOneDeadlock(parties: readonly Party[], expected: ExpectedDeadlock): Refused & { party: string } {
  const found = refusals(parties).filter((event) => event.error.isDeadlock);
  const where = found.map((event) => `${event.party} ${event.chain} step ${event.step}`);
  expect({ deadlocks: where, events: where.length === 1 ? '' : describeEvents(parties) }).toEqual({
    deadlocks: [expected.refused],
    events: '',
  });
  const refusal = found[0];
  const error = refusal.error;
  if (process.env.DEADLOCK_TIMINGS) {
    const began = allEvents(parties).find(
      (event) => event.ev === 'waiting' && event.party === refusal.party && event.chain === refusal.chain && event.step === refusal.step,
    );
    const ends = allEvents(parties).filter((event) => event.ev === 'done').map((event) => event.at);
    process.stderr.write(
      `[deadlock timing] ${expected.refused}: refused ${began ? refusal.at - began.at : '?'} ms after its wait began; ` +
        `last chain done ${Math.max(...ends) - refusal.at} ms after the refusal\n`,
    );
  }
  expect(error.isLockError).toBe(true);
  expect(error.statusCode).toBe(409);
  expect(error.extensions).toMatchObject({ code: 'CONFLICT', statusCode: 409 });
  expect([...(error.lockName as string[])].sort()).toEqual([...expected.locks].sort());
  const cycle = error.cycle ?? [];
  expect([...new Set(cycle.map((step) => step.lock))].sort()).toEqual([...expected.locks].sort());
  if (expected.first) {
    expect(cycle[0]).toMatchObject({
      lock: expected.first.lock,
      ...(expected.first.owner ? { owner: expected.first.owner } : {}),
      ...(expected.first.inLine === true ? { inLine: true } : {}),
    });
    if (expected.first.inLine === false) expect(cycle[0].inLine ?? false).toBe(false);
  }
  if (expected.chainOwners) expect(expected.chainOwners).toContain(cycle[cycle.length - 1]?.owner);
  for (const lock of expected.locks) expect(error.message).toContain(JSON.stringify(lock));
  return refusal;
}
