/**
 * Cycles injected at random (docs/deadlocks.md, issue 30): each run builds one cycle of 2-4 parties
 * over 2-4 locks; party i holds lock i and then asks for lock i+1 (the last asks for lock 0). A lock of
 * the cycle is plain, fair or a write lock (the asker may ask the other kind of the same key: plain for
 * a fair one, a read of a written one), or one of two shapes: a read held while a writer that holds
 * nothing waits in line and the asker asks a read (it queues behind the writer), or a semaphore whose
 * holder's permits the asker needs (`permits - held < take`). Plain and fair locks may have a waiter
 * that holds nothing standing in their line ahead of the asker. Parties and line waiters are placed at
 * random in this process's module instance A, a second instance B (they see each other only through
 * Redis), or a child process (test/fixtures/deadlock-random-chains.ts); in a third of the runs the whole cycle is in
 * one place (one instance: refused at once). Unrelated background chains (locks
 * of their own, taken in one global order: test/support/deadlock-chains.ts) run meanwhile in both
 * processes.
 *
 * Barriers, never sleeps: every party reports that it holds its first lock; line waiters are seen in
 * the lock's line (inspect); then the parties ask in a drawn order, each next one told only once the
 * previous one's wait is in its process's wait-for graph (plus GAP_MS, so that the waits' starts on the
 * Redis server's clock keep that order: the youngest is the last to ask). In a quarter of the runs the
 * parties are told to ask all at once instead (the waits race to close the cycle: still one refusal,
 * whichever wait is the youngest).
 *
 * Asserted per run: exactly one LockDeadlockError among the parties, for the last party to ask (the
 * youngest wait; any party when they ask at once); its `lockName` is exactly the cycle's locks, its cycle starts at the lock it asked
 * and ends at the lock it held; it arrives within IN_PROCESS_BOUND_MS of the cycle closing when every
 * party (and every line writer a read queues behind) is in one module instance, else within
 * 1.5 x deadlockCheckAfter + CROSS_SLACK_MS; every other party and line waiter gets its lock; no
 * background chain fails.
 *
 * CI: FC_INJECTED_RUNS (default 25) runs from a fixed seed. Replay a failure with the printed line:
 *   FC_SEED=<seed> FC_PATH=<path> npx jest test/deadlocks/randomized-injected.spec.ts
 * More: FC_INJECTED_RUNS=200 FC_TIME_LIMIT_MS=900000 FC_SEED=$RANDOM npx jest test/deadlocks/randomized-injected.spec.ts
 * FC_TRACE=1 prints every run's cycle and when its refusal came.
 */
import fc from 'fast-check';
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { performance } from 'node:perf_hooks';
import { FairLockService, LockService, ReadWriteLockService } from '../../lib';
import {
  describeParts,
  generateChain,
  PartyHost,
  runChain,
  sleep,
  type BystanderPlan,
  type ChainPlan,
  type ChainResult,
  type EdgeUse,
  type ErrorInfo,
  type PartyEvent,
  type PartyPlan,
  type Resource,
} from '../support/deadlock-random-chains';
import { DeadlockChild, type ChildEvent } from '../support/deadlock-child';
import { createLockApp } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

const RUNS = Number(process.env.FC_INJECTED_RUNS ?? 25);
const SEED = Number(process.env.FC_SEED ?? 30_3030);
const TIME_LIMIT_MS = Number(process.env.FC_TIME_LIMIT_MS ?? 240_000);
/** In one module instance a cycle is refused at once: generous. */
const IN_PROCESS_BOUND_MS = 2_000;
/** Across processes: 1.5 x deadlockCheckAfter plus the check's round trips, generous (a 2-core machine shared with others). */
const CROSS_SLACK_MS = 2_000;
/** After a party's wait is registered, before the next party asks: their starts on the server clock keep the order. */
const GAP_MS = 50;
/** Everything of a run settles well within this once the cycle is broken. */
const SETTLE_MS = 30_000;

const BACKGROUND: readonly Resource[] = [
  { name: 'g0', type: 'lock' },
  { name: 'g1', type: 'rw' },
  { name: 'g2', type: 'lock' },
  { name: 's3', type: 'sem', permits: 2 },
];

type Where = 'A' | 'B' | 'child';
type LockShape = 'plain' | 'fair' | 'write' | 'read-behind-writer' | 'semaphore';

interface CycleLock {
  shape: LockShape;
  /** plain/fair: the asker takes the other kind of the same key; write: the asker reads. */
  askOther: boolean;
  permits: number;
  held: number;
  /** Where the line waiter stands (a writer for read-behind-writer; for plain/fair, maybe none). */
  lineWaiter?: Where;
  /** For a semaphore: how many of `permits - held + 1 .. permits` the asker takes (0-based). */
  askPick: number;
}

interface Schedule {
  deadlockCheckAfter: number;
  locks: CycleLock[];
  parties: Where[];
  /** When set, every party and every line writer is placed there (a cycle in one module instance or one process). */
  together?: Where;
  /** Sort keys: parties ask in ascending order of these. */
  askKeys: number[];
  /** Every party is told to ask at once (no barrier between the asks): the waits race to close the cycle. */
  simultaneous: boolean;
  background: Array<{ seed: number; where: Where; startMs: number; rounds: number }>;
}

const whereArb = fc.constantFrom<Where>('A', 'B', 'child');

const lockArb: fc.Arbitrary<CycleLock> = fc
  .record({
    shape: fc.constantFrom<LockShape>('plain', 'plain', 'fair', 'fair', 'write', 'write', 'read-behind-writer', 'semaphore'),
    askOther: fc.boolean(),
    permits: fc.integer({ min: 2, max: 3 }),
    heldPick: fc.integer({ min: 0, max: 2 }),
    askPick: fc.integer({ min: 0, max: 2 }),
    lineWaiter: fc.option(whereArb, { nil: undefined }),
    writer: whereArb,
  })
  .map(({ shape, askOther, permits, heldPick, askPick, lineWaiter, writer }) => ({
    shape,
    askOther,
    permits,
    held: 1 + (heldPick % permits),
    askPick,
    lineWaiter: shape === 'read-behind-writer' ? writer : shape === 'plain' || shape === 'fair' ? lineWaiter : undefined,
  }));

const scheduleArb: fc.Arbitrary<Schedule> = fc.integer({ min: 2, max: 4 }).chain((length) =>
  fc.record({
    deadlockCheckAfter: fc.integer({ min: 150, max: 400 }),
    locks: fc.array(lockArb, { minLength: length, maxLength: length }),
    parties: fc.array(whereArb, { minLength: length, maxLength: length }),
    together: fc.oneof({ arbitrary: whereArb, weight: 1 }, { arbitrary: fc.constant(undefined), weight: 2 }),
    askKeys: fc.uniqueArray(fc.integer({ min: 0, max: 1_000 }), { minLength: length, maxLength: length }),
    simultaneous: fc.boolean().chain((b) => (b ? fc.boolean() : fc.constant(false))),
    background: fc.array(
      fc.record({ seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }), where: whereArb, startMs: fc.integer({ min: 0, max: 300 }), rounds: fc.integer({ min: 1, max: 4 }) }),
      { minLength: 1, maxLength: 5 },
    ),
  }),
);

/** How the holder of lock `i` takes it, and how the party before it asks for it. */
function usesOf(lock: CycleLock, name: string): { hold: EdgeUse; ask: EdgeUse; line?: EdgeUse } {
  switch (lock.shape) {
    case 'plain':
    case 'fair': {
      const other = lock.shape === 'plain' ? 'fair' : 'plain';
      return { hold: { kind: lock.shape, name }, ask: { kind: lock.askOther ? other : lock.shape, name }, line: lock.lineWaiter ? { kind: lock.shape, name } : undefined };
    }
    case 'write':
      return { hold: { kind: 'write', name }, ask: { kind: lock.askOther ? 'read' : 'write', name } };
    case 'read-behind-writer':
      return { hold: { kind: 'read', name }, ask: { kind: 'read', name }, line: { kind: 'write', name } };
    case 'semaphore': {
      const least = lock.permits - lock.held + 1;
      const take = least + (lock.askPick % (lock.permits - least + 1));
      return { hold: { kind: 'sem', name, take: lock.held, permits: lock.permits }, ask: { kind: 'sem', name, take, permits: lock.permits } };
    }
  }
}

const describeUse = (use: EdgeUse): string => `${use.kind}(${use.name}${use.kind === 'sem' ? `:${use.take}/${use.permits}` : ''})`;

const totals = { runs: 0, inProcess: 0, cross: 0, byLength: {} as Record<number, number>, maxInProcessMs: 0, maxCrossOverDca: 0, background: 0 };

describe('deadlocks, randomized: an injected cycle is refused once, the youngest wait, within its bound', () => {
  let redis: TestRedis;
  let raw: Redis;
  let child: DeadlockChild;
  let runSeq = 0;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    child = DeadlockChild.spawn();
    await child.ready;
  }, 60_000);
  afterAll(async () => {
    await child?.close();
    await redis?.stop();
  });

  async function runSchedule(schedule: Schedule): Promise<void> {
    const prefix = `ic${++runSeq}-`;
    const dca = schedule.deadlockCheckAfter;
    const length = schedule.locks.length;
    const names = schedule.locks.map((_, i) => `c${i}`);
    const uses = schedule.locks.map((lock, i) => usesOf(lock, names[i]));
    const instanceOf = (where: Where): number => (where === 'B' ? 1 : 0);
    const parties: Array<PartyPlan & { where: Where }> = schedule.parties.map((drawn, i) => ({
      id: `p${i}`,
      where: schedule.together ?? drawn,
      instance: instanceOf(schedule.together ?? drawn),
      hold: uses[i].hold,
      next: uses[(i + 1) % length].ask,
    }));
    const bystanders: Array<BystanderPlan & { where: Where }> = schedule.locks.flatMap((lock, i) => {
      const line = uses[i].line;
      const where = line?.kind === 'write' && schedule.together ? schedule.together : lock.lineWaiter;
      return line && where ? [{ id: `w${i}`, where, instance: instanceOf(where), lock: line }] : [];
    });
    const askOrder = parties.map((_, i) => i).sort((a, b) => schedule.askKeys[a] - schedule.askKeys[b]);
    const background: Array<ChainPlan & { where: Where }> = schedule.background.map((b, i) => ({
      id: `g${i}@${b.where}`,
      where: b.where,
      instance: instanceOf(b.where),
      startMs: b.startMs,
      rounds: b.rounds,
      parts: generateChain(b.seed, BACKGROUND),
    }));
    // One module instance holds the whole cycle (its parties, and the writers reads queue behind): at once.
    const places = new Set([...parties.map((p) => p.where), ...bystanders.filter((b) => b.lock.kind === 'write').map((b) => b.where)]);
    const inProcess = places.size === 1;
    const bound = inProcess ? IN_PROCESS_BOUND_MS : 1.5 * dca + CROSS_SLACK_MS;
    const describe = () =>
      `deadlockCheckAfter ${dca}, ${inProcess ? 'in one instance' : 'across instances/processes'} (bound ${bound} ms)\n` +
      parties.map((p) => `  ${p.id}@${p.where}: holds ${describeUse(p.hold)}, asks ${describeUse(p.next)}`).join('\n') +
      `\n  asks ${schedule.simultaneous ? 'all at once' : 'in order'} ${askOrder.map((i) => `p${i}`).join(', ')}\n` +
      bystanders.map((b) => `  ${b.id}@${b.where}: waits in line for ${describeUse(b.lock)}\n`).join('') +
      background.map((b) => `  ${b.id} +${b.startMs}ms x${b.rounds}: ${describeParts(b.parts)}\n`).join('');

    const options = { redis: redis.url, deadlockCheckAfter: dca };
    const apps: TestingModule[] = await Promise.all([createLockApp(options), createLockApp(options)]);
    await child.request({ op: 'setup', redisUrl: redis.url, options: { deadlockCheckAfter: dca }, instances: 1, prefix }, 'setup');
    // Every party event, from either process, with when this process learned it.
    const events: Array<PartyEvent & { at: number }> = [];
    const record = (event: PartyEvent, at = performance.now()) => events.push({ ...event, at });
    const host = new PartyHost(apps, prefix, (event) => record(event));
    const offChild = child.on((event: ChildEvent) => {
      if (event.ev === 'holding' || event.ev === 'waiting' || event.ev === 'done') record(event as unknown as PartyEvent, event.at);
    });
    const seen = (ev: PartyEvent['ev'], id: string) => events.find((e) => e.ev === ev && e.id === id);
    const broken: string[] = [];
    try {
      // Background chains, in both processes, for the whole run.
      const env = { apps, redis: raw, prefix, deadlockCheckAfter: dca };
      const childBackground = child.request({ op: 'chains', chains: background.filter((b) => b.where === 'child').map(({ where: _, ...plan }) => plan), deadlockCheckAfter: dca }, 'chains');
      const backgroundDone = Promise.all([
        Promise.all(background.filter((b) => b.where !== 'child').map((plan) => runChain(env, plan))),
        childBackground.then((e) => e.results as ChainResult[]),
      ]).then(([mine, theirs]) => [...mine, ...theirs]);

      const place = (where: Where, op: 'party' | 'bystander', plan: PartyPlan | BystanderPlan) => {
        if (where === 'child') child.send({ op, plan });
        else if (op === 'party') host.startParty(plan as PartyPlan);
        else host.startBystander(plan as BystanderPlan);
      };
      // Barrier 1: every party holds its first lock.
      for (const party of parties) place(party.where, 'party', party);
      await waitFor(() => parties.every((p) => seen('holding', p.id) || seen('done', p.id)), { what: 'every party to hold its first lock', timeoutMs: 20_000 });
      const early = parties.filter((p) => seen('done', p.id));
      if (early.length > 0) throw new Error(`parties ended before asking: ${early.map((p) => `${p.id} ${JSON.stringify(seen('done', p.id))}`).join(', ')}`);
      // Barrier 2: the line waiters stand in their lines.
      const app = apps[0];
      const lineLength = async (use: EdgeUse): Promise<number> => {
        const name = prefix + use.name;
        const info = use.kind === 'write' ? await app.get(ReadWriteLockService).inspect(name) : use.kind === 'fair' ? await app.get(FairLockService).inspect(name) : await app.get(LockService).inspect(name);
        return info.waiters?.length ?? 0;
      };
      for (const bystander of bystanders) {
        place(bystander.where, 'bystander', bystander);
        await waitFor(async () => (await lineLength(bystander.lock)) >= 1, { what: `${bystander.id} in the line of ${bystander.lock.name}`, timeoutMs: 20_000 });
      }
      // The asks, in the drawn order: each next party asks once the previous one's wait is registered.
      let closedAt = 0;
      for (const [k, index] of askOrder.entries()) {
        const party = parties[index];
        const last = k === askOrder.length - 1;
        if (last) closedAt = performance.now();
        if (party.where === 'child') child.send({ op: 'ask', id: party.id });
        else host.ask(party.id);
        if (last) break;
        if (schedule.simultaneous) continue;
        await waitFor(() => Boolean(seen('waiting', party.id) || seen('done', party.id)), { what: `${party.id}'s wait to be registered`, timeoutMs: 20_000 });
        if (seen('done', party.id)) break; // refused or done already: reported below
        await sleep(GAP_MS);
      }
      const everyone = [...parties.map((p) => p.id), ...bystanders.map((b) => b.id)];
      await waitFor(() => everyone.every((id) => seen('done', id)), { what: 'every party and line waiter to end', timeoutMs: SETTLE_MS }).catch(() =>
        broken.push(`did not end within ${SETTLE_MS} ms: ${everyone.filter((id) => !seen('done', id)).join(', ')}`),
      );
      let settleBound: NodeJS.Timeout | undefined;
      const backgroundResults = await Promise.race([backgroundDone, new Promise<undefined>((resolve) => (settleBound = setTimeout(() => resolve(undefined), SETTLE_MS)))]);
      clearTimeout(settleBound);

      // Exactly one refusal among the parties: the youngest wait's, naming the cycle's locks.
      const refused = parties.flatMap((p) => {
        const done = seen('done', p.id) as { error?: ErrorInfo; at: number } | undefined;
        return done?.error ? [{ party: p, error: done.error, at: done.at }] : [];
      });
      const deadlocks = refused.filter((r) => r.error.deadlock);
      for (const r of refused.filter((r) => !r.error.deadlock)) broken.push(`${r.party.id} failed with ${r.error.name}: ${r.error.message}`);
      if (deadlocks.length !== 1) broken.push(`${deadlocks.length} LockDeadlockError(s) among the parties (one expected): ${deadlocks.map((d) => `${d.party.id}: ${d.error.message}`).join(' | ')}`);
      const youngest = parties[askOrder[askOrder.length - 1]];
      let tookMs: number | undefined;
      for (const { party, error, at } of deadlocks) {
        tookMs = Math.round(at - closedAt);
        if (party !== youngest && !schedule.simultaneous) broken.push(`refused ${party.id}, not the youngest wait (${youngest.id}, the last to ask): ${error.message}`);
        const expected = [...new Set(names.map((n) => prefix + n))].sort();
        const got = [...(error.lockName ?? [])].sort();
        if (JSON.stringify(got) !== JSON.stringify(expected)) broken.push(`${party.id}'s cycle names ${JSON.stringify(got)}, the cycle's locks are ${JSON.stringify(expected)}: ${error.message}`);
        const cycle = error.cycle ?? [];
        if (cycle[0]?.lock !== prefix + party.next.name) broken.push(`${party.id}'s cycle starts at ${cycle[0]?.lock}, it asked for ${prefix + party.next.name}`);
        if (cycle[cycle.length - 1]?.lock !== prefix + party.hold.name) broken.push(`${party.id}'s cycle ends at ${cycle[cycle.length - 1]?.lock}, it held ${prefix + party.hold.name}`);
        if (cycle.length < length) broken.push(`${party.id}'s cycle has ${cycle.length} steps, the cycle ${length} locks`);
        // A read behind a writer waits through the writer's line entry: the step says so.
        for (const [i, lock] of schedule.locks.entries()) {
          if (lock.shape === 'read-behind-writer' && !cycle.some((step) => step.lock === prefix + names[i] && step.inLine)) broken.push(`${party.id}'s cycle has no in-line step at ${prefix + names[i]} (a read behind a writer): ${error.message}`);
        }
        if (tookMs > bound) broken.push(`refused ${tookMs} ms after the cycle closed (bound ${bound} ms)`);
      }
      // Line waiters hold nothing: never refused, they get their lock.
      for (const b of bystanders) {
        const done = seen('done', b.id) as { error?: ErrorInfo } | undefined;
        if (done?.error) broken.push(`line waiter ${b.id} failed with ${done.error.name}: ${done.error.message}`);
      }
      if (!backgroundResults) broken.push(`background chains did not end within ${SETTLE_MS} ms`);
      for (const result of backgroundResults ?? []) {
        if (result.error) broken.push(`background ${result.id} failed with ${result.error.name}: ${result.error.message}`);
        broken.push(...result.violations.map((v) => `background exclusion: ${v}`));
      }
      totals.runs += 1;
      totals.byLength[length] = (totals.byLength[length] ?? 0) + 1;
      totals.background += background.length;
      if (inProcess) {
        totals.inProcess += 1;
        totals.maxInProcessMs = Math.max(totals.maxInProcessMs, tookMs ?? 0);
      } else {
        totals.cross += 1;
        totals.maxCrossOverDca = Math.max(totals.maxCrossOverDca, (tookMs ?? 0) / dca);
      }
      if (process.env.FC_TRACE) process.stderr.write(`${prefix} L=${length} ${inProcess ? 'local' : 'cross'}${schedule.simultaneous ? ' at once' : ''} dca ${dca}: refused ${deadlocks.map((d) => d.party.id).join(',')} after ${tookMs} ms; ${parties.map((p) => `${p.id}@${p.where} ${describeUse(p.hold)}->${describeUse(p.next)}`).join(', ')}${bystanders.map((b) => `, ${b.id}@${b.where} in line ${describeUse(b.lock)}`).join('')}\n`);
    } catch (error) {
      broken.push(String((error as Error)?.message ?? error));
    } finally {
      offChild();
      await Promise.all(apps.map((a) => a.close()));
      await child.request({ op: 'teardown' }, 'teardown');
    }
    if (broken.length > 0) throw new Error(`${broken.join('\n')}\nschedule:\n${describe()}`);
  }

  it(
    'exactly one refusal per cycle, the youngest wait, within its bound; the rest finishes',
    async () => {
      const path = process.env.FC_PATH;
      // Past the time limit the remaining runs are skipped (a run in progress is never abandoned).
      const deadline = Date.now() + TIME_LIMIT_MS;
      let skipped = 0;
      const details = await fc.check(
        fc.asyncProperty(scheduleArb, async (schedule) => {
          if (Date.now() > deadline) skipped += 1;
          else await runSchedule(schedule);
        }),
        { seed: SEED, path, numRuns: path ? 1 : RUNS, endOnFailure: true },
      );
      process.stdout.write(
        `randomized injected cycles: seed ${details.seed}, ${totals.runs} cycles${skipped > 0 ? ` (time limit reached: ${skipped} skipped)` : ''} ` +
          `(${JSON.stringify(totals.byLength)} by length; ${totals.inProcess} in one instance, slowest refusal ${totals.maxInProcessMs} ms; ` +
          `${totals.cross} across, slowest ${totals.maxCrossOverDca.toFixed(2)} x deadlockCheckAfter), ${totals.background} background chains\n`,
      );
      if (details.failed) {
        const replay = `FC_SEED=${details.seed} FC_PATH=${details.counterexamplePath} npx jest test/deadlocks/randomized-injected.spec.ts`;
        const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
        throw new Error(`${cause}\n\nReplay: ${replay}`);
      }
    },
    TIME_LIMIT_MS + 120_000,
  );
});
