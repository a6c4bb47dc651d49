import type { TestingModule } from '@nestjs/testing';
import type { Lock } from '../../lib';
import { releasesSettled } from '../support/lock-app';
import { ENGINES, type ContractEngine, type EngineHandle } from '../support/lock-contract';
import { OverlapProbe } from '../support/overlap-probe';
import { waitFor } from '../support/wait-for';
import { aborted, FAIR, loseHold, PLAIN, settled, startApps, WRITE, type HandleKind, type Loss } from '../support/hold-handles';

/**
 * Issue 41 (DESIGN §24): a hold has a handle, and every release names the hold it took.
 *
 * A release that names "the owner's current hold" ends whatever hold the owner has now, which after a
 * loss may be a later one taken through another path: a run's release ends a hold a lock object made
 * in its body took again (a), and one flow's `unlock()` on a shared object ends the hold another flow
 * took after the loss (f). Each test keeps the later holder inside an OverlapProbe and lets another
 * module instance try the lock: a second holder shows as `maxInside` 2 (and `otherGot` true).
 *
 * Semantics assumed (the fix's, DESIGN §24): a release ends exactly the handle it names; a release of
 * an ended episode rejects `LockNotHeldError` (a run only logs it) and releases nothing; after a loss,
 * the unlocks owed to the lost episode settle first (the first `unlock()` after B's `lock()` is A's);
 * an object asking after its body's hold ended is an owner of its own. A loss "noticed by a renewal"
 * is waited for through `getFencingToken()`, which reports no token once this process forgot the hold.
 */
const LOSSES: ReadonlyArray<{ loss: Loss; title: string }> = [
  // The run's module learns of it at a renewal, which the test waits for (the signal aborts).
  { loss: 'forceUnlock', title: 'force-released from another instance, the signal aborted' },
  // Nothing noticed yet: the object's lock() is granted a new episode while the run still counts the old one.
  { loss: 'del', title: 'key deleted, not waited for' },
];
const KINDS: ReadonlyArray<HandleKind> = [PLAIN, FAIR, WRITE];
const CASES = KINDS.flatMap((kind) => LOSSES.map(({ loss, title }) => ({ kind, loss, title, label: kind.kind })));

describe.each(ENGINES())('hold handles: a release ends only the hold it took ($name)', (engine: ContractEngine) => {
  let handle: EngineHandle;
  let app: TestingModule;
  let other: TestingModule;
  let seq = 0;
  const fresh = (what: string) => `handles-${what}-${++seq}`;

  beforeAll(async () => {
    handle = await engine.start();
    // A short watchdog: a forced release is noticed within a round (200 ms).
    [app, other] = await startApps(handle, 2, { watchdogTimeout: 600 });
  });
  afterAll(async () => {
    await other?.close();
    await app?.close();
    await handle?.stop();
  });

  it.each(CASES)('a. $label: the run ($title) ends; the hold its body took again through getLock stays held', async ({ kind, loss }) => {
    const name = fresh(`a-${kind.kind}-${loss}`);
    const probe = new OverlapProbe();
    let object: Lock | undefined;
    let objectHolds = false;
    let otherGot = false;
    const otherLock = kind.make(other, name);
    try {
      await kind.run(app, name, async ({ signal }) => {
        // Made while the run holds: today bound to the run's owner for good.
        object = kind.make(app, name);
        await loseHold(handle, other, kind, name, loss);
        if (loss === 'forceUnlock') await aborted(signal, "the run's signal to abort after the forced release");
        await object.lock();
        objectHolds = true;
        void probe.enter(name, 'the object holds');
      });
      // The run's release has been answered: whatever it ended in Redis is ended.
      await releasesSettled(app);
      otherGot = await otherLock.tryLock({ waitTime: 0 });
      if (otherGot) void probe.enter(name, 'another instance holds');
      const objectUnlock = await settled(object!.unlock());
      objectHolds = objectUnlock !== 'resolved';
      // Received on 46f6e41: { otherGot: true, maxInside: 2, objectUnlock: 'LockNotHeldError' }.
      expect({ otherGot, maxInside: probe.maxInside(name), objectUnlock }).toEqual({ otherGot: false, maxInside: 1, objectUnlock: 'resolved' });
      // Nothing left behind: the lock is free for anyone.
      expect(await otherLock.tryLock({ waitTime: 2_000 })).toBe(true);
      otherGot = true;
    } finally {
      probe.holding = false;
      for (const { leave } of probe.entered) leave();
      if (objectHolds) await object?.unlock().catch(() => undefined);
      if (otherGot) await otherLock.unlock().catch(() => undefined);
      await kind.make(other, name).forceUnlock();
    }
  });

  /** Flow A's loss: not noticed by the time flow B asks, or noticed (the object no longer reports a token). */
  const FLOW_LOSSES = [
    { loss: 'del' as const, noticed: false, title: 'key deleted' },
    { loss: 'forceUnlock' as const, noticed: false, title: 'force-released' },
    { loss: 'forceUnlock' as const, noticed: true, title: 'force-released, noticed by a renewal' },
  ];
  it.each(KINDS.flatMap((kind) => FLOW_LOSSES.map((flow) => ({ kind, ...flow, label: kind.kind }))))(
    "f. $label: two flows on one lock object, the first one's hold lost ($title): its unlock() leaves the second flow's hold alone",
    async ({ kind, loss, noticed }) => {
      const name = fresh(`f-${kind.kind}-${loss}-${noticed}`);
      const probe = new OverlapProbe();
      // Made outside any run: the object owns itself, and both flows use it.
      const shared = kind.make(app, name);
      const otherLock = kind.make(other, name);
      let otherHolds = false;
      try {
        await shared.lock(); // flow A
        await loseHold(handle, other, kind, name, loss);
        // A renewal that finds the hold gone forgets it here: `getFencingToken()` (local) says so.
        if (noticed) await waitFor(() => shared.getFencingToken() === undefined, { what: 'the loss noticed by a renewal' });
        await shared.lock(); // flow B: a new episode in Redis
        void probe.enter(name, 'flow B holds');
        // Flow A, done (or told by its own means), unlocks in its finally.
        const aUnlock = await settled(shared.unlock());
        const otherGot = await otherLock.tryLock({ waitTime: 0 });
        otherHolds = otherGot;
        if (otherGot) void probe.enter(name, 'another instance holds');
        const maxInside = probe.maxInside(name);
        // Flow B ends: its unlock releases its hold, and the lock is free for anyone.
        const bUnlock = await settled(shared.unlock());
        if (otherHolds) await otherLock.unlock().catch(() => undefined);
        const freeAfter = await otherLock.tryLock({ waitTime: 2_000 });
        otherHolds = freeAfter;
        // Received on 46f6e41: { aUnlock: 'resolved', otherGot: true, maxInside: 2, bUnlock: 'LockNotHeldError', freeAfter: true }.
        expect({ aUnlock, otherGot, maxInside, bUnlock, freeAfter }).toEqual({
          aUnlock: 'LockNotHeldError',
          otherGot: false,
          maxInside: 1,
          bUnlock: 'resolved',
          freeAfter: true,
        });
      } finally {
        probe.holding = false;
        for (const { leave } of probe.entered) leave();
        if (otherHolds) await otherLock.unlock().catch(() => undefined);
        await kind.make(other, name).forceUnlock();
      }
    },
  );

  it.each(KINDS.flatMap((kind) => LOSSES.map(({ loss, title }) => ({ kind, loss, title, label: kind.kind }))))(
    'f. regression, $label: a run whose hold was lost ($title) re-locks a chain-bound object; its unlock() resolves',
    async ({ kind, loss }) => {
      const name = fresh(`f-reg-${kind.kind}-${loss}`);
      // An unlock owed to the run's lost hold is the run's own release, not the object's: a fix that
      // settles owed unlocks first must not hand the object's unlock a false LockNotHeldError.
      const outcome = await kind.run(app, name, async ({ signal }) => {
        const bound = kind.make(app, name);
        await loseHold(handle, other, kind, name, loss);
        if (loss === 'forceUnlock') await aborted(signal, "the run's signal to abort after the forced release");
        await bound.lock();
        return settled(bound.unlock());
      });
      await releasesSettled(app);
      expect(outcome).toBe('resolved');
      // Nothing left held: another instance takes it.
      const otherLock = kind.make(other, name);
      await waitFor(() => otherLock.tryLock({ waitTime: 0 }), { what: `${name} free after the run`, timeoutMs: 5_000 });
      await otherLock.unlock();
    },
  );
});
