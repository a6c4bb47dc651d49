import type { TestingModule } from '@nestjs/testing';
import { ReadWriteLockService, type Lock } from '../../lib';
import { deferred, releasesSettled } from '../support/lock-app';
import { ENGINES, type ContractEngine, type EngineHandle } from '../support/lock-contract';
import { OverlapProbe } from '../support/overlap-probe';
import { waitFor } from '../support/wait-for';
import { aborted, FAIR, loseHold, PLAIN, startApps, WRITE } from '../support/hold-handles';

/**
 * Issue 41 (DESIGN §24): every body counting on an ended hold is told, and a body's release ends only
 * its own hold, with no lock object involved.
 *
 * c. Inside `run(name)` the key is deleted and another instance takes the lock; a nested `run(name)`
 *    the body does not await asks (as the body's owner, today) and waits; the body is told (its
 *    signal aborts at a renewal); the other instance lets go and the nested run gets the lock, as a
 *    new hold with a live signal. The outer body then ends: its release must not end the nested
 *    run's hold (a third instance stays out while the nested body runs untold).
 * e. Inside `runRead(name)` the key is deleted; a writer of another instance enters and leaves; the
 *    body's owner then reads again (a read lock object made in the body, or a nested `runRead`): the
 *    outer read body counted on the ended read hold and must be told, within a bounded wait.
 *
 * The watchdog is 3 s (a renewal every second): long enough that no renewal falls between the loss
 * and the next step on today's code (which would hide the bug), short enough to tell within seconds.
 */
const WATCHDOG_MS = 3_000;
/** Bounds that catch a hang or a body never told, never a pace the test relies on. */
const TOLD_WITHIN_MS = 4 * WATCHDOG_MS;

describe.each(ENGINES())('hold handles: bodies counting on an ended hold are told ($name)', (engine: ContractEngine) => {
  let handle: EngineHandle;
  let app: TestingModule;
  let other: TestingModule;
  let third: TestingModule;
  let seq = 0;
  const fresh = (what: string) => `handles-told-${what}-${++seq}`;

  beforeAll(async () => {
    handle = await engine.start();
    [app, other, third] = await startApps(handle, 3, { watchdogTimeout: WATCHDOG_MS });
  });
  afterAll(async () => {
    await Promise.all([app, other, third].map((m) => m?.close()));
    await handle?.stop();
  });

  it.each([PLAIN, FAIR, WRITE].map((kind) => ({ kind, label: kind.kind })))(
    'c. $label: a nested run the body did not await, granted after the body\'s hold ended, keeps its hold when the body ends',
    async ({ kind }) => {
      const name = fresh(`c-${kind.kind}`);
      const probe = new OverlapProbe();
      const otherLock = kind.make(other, name);
      const thirdLock = kind.make(third, name);
      const nestedIn = deferred<AbortSignal>();
      let nested: Promise<unknown> = Promise.resolve();
      let outerSignal!: AbortSignal;
      let thirdHolds = false;
      try {
        await kind.run(app, name, async ({ signal }) => {
          outerSignal = signal;
          await loseHold(handle, other, kind, name, 'del');
          await otherLock.lock();
          // Not awaited by the body; asks while the other instance holds, and waits.
          nested = kind.run(app, name, ({ signal: nestedSignal }) => {
            nestedIn.resolve(nestedSignal);
            return probe.enter(name, 'nested run');
          }, { waitTime: 30_000 });
          await aborted(signal, "the outer body's signal to abort (a renewal finds another owner)", TOLD_WITHIN_MS);
          await otherLock.unlock();
          await nestedIn.promise;
        });
        // The outer body ended (told) and its release was answered; the nested body still runs.
        await releasesSettled(app);
        const nestedSignal = await nestedIn.promise;
        thirdHolds = await thirdLock.tryLock({ waitTime: 0 });
        if (thirdHolds) void probe.enter(name, 'a third instance');
        const seen = { outerTold: outerSignal.aborted, nestedTold: nestedSignal.aborted, thirdGot: thirdHolds, maxInside: probe.maxInside(name) };
        // Received on 46f6e41: { outerTold: true, nestedTold: false, thirdGot: true, maxInside: 2 }.
        expect(seen).toEqual({ outerTold: true, nestedTold: false, thirdGot: false, maxInside: 1 });
        probe.leave(0);
        await nested;
        await releasesSettled(app);
        thirdHolds = await thirdLock.tryLock({ waitTime: 2_000 });
        expect(thirdHolds).toBe(true);
      } finally {
        probe.holding = false;
        for (const { leave } of probe.entered) leave();
        await nested.catch(() => undefined);
        if (thirdHolds) await thirdLock.unlock().catch(() => undefined);
        await kind.make(other, name).forceUnlock();
      }
    },
  );

  it.each([{ again: 'a read lock object made in the body' }, { again: 'a nested runRead still running' }])(
    'e. read: the body\'s owner reads again after its read hold ended and a writer came and went ($again): the body is told',
    async ({ again }) => {
      const rw = app.get(ReadWriteLockService);
      const name = fresh(`e-${again.split(' ')[1]}`);
      const nestedGo = deferred();
      const nestedIn = deferred();
      let nested: Promise<unknown> = Promise.resolve();
      let reader: Lock | undefined;
      let told = false;
      try {
        await rw.runRead(name, async ({ signal }) => {
          reader = rw.getReadWriteLock(name).readLock();
          await loseHold(handle, other, WRITE, name, 'del');
          const writer = other.get(ReadWriteLockService).getReadWriteLock(name).writeLock();
          expect(await writer.tryLock({ waitTime: 2_000 })).toBe(true);
          await writer.unlock();
          if (again.startsWith('a read lock')) await reader.lock();
          else {
            nested = rw.runRead(name, async () => {
              nestedIn.resolve();
              await nestedGo.promise;
            }, { waitTime: 2_000 });
            await nestedIn.promise;
          }
          // Received on 46f6e41: timed out (the renewal finds the owner reading again and says held).
          await waitFor(() => signal.aborted, { what: "the outer read body's signal to abort", timeoutMs: TOLD_WITHIN_MS });
          told = true;
        });
        expect(told).toBe(true);
      } finally {
        nestedGo.resolve();
        await nested.catch(() => undefined);
        if (again.startsWith('a read lock')) await reader?.unlock().catch(() => undefined);
        await other.get(ReadWriteLockService).getReadWriteLock(name).writeLock().forceUnlock();
      }
    },
    TOLD_WITHIN_MS + 10_000,
  );

  // TODO(issue 41, "RedLock joins the same model"): no public `run` for a RedLock exists on 46f6e41
  // (`getRedLock(name)` is a `Lock`; only a multi-lock wrapping it has a run). Once the fix adds one,
  // enable this: on one master (`redlock: { clients: [url] }`), a body holding the RedLock through
  // that run is told (its signal aborts with LockLostError) when the key is deleted behind it.
  it.todo('RedLock: a body holding it through its public run is told when its key is deleted (needs the public run the fix adds)');
});
