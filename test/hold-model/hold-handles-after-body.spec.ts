import type { TestingModule } from '@nestjs/testing';
import type { Lock, LockOptions } from '../../lib';
import { deferred, releasesSettled } from '../support/lock-app';
import { ENGINES, type ContractEngine, type EngineHandle } from '../support/lock-contract';
import { OverlapProbe } from '../support/overlap-probe';
import { aborted, FAIR, loseHold, PLAIN, settled, startApps, WRITE, type HandleKind } from '../support/hold-handles';

/**
 * Issue 41 (DESIGN §24): a lock object made inside a body re-enters that body's hold only while the
 * body runs and its hold is current, decided when the object asks (not when it was made); asked
 * later, it is an owner of its own and waits like anyone.
 *
 * b. One timer re-enters through the object while the body runs (legitimate) and stays inside past
 *    the body's end; a second timer asks through the same object after the body ended: it must wait
 *    (false after its 300 ms), not re-enter beside the first.
 * d. Two objects made in one body, once the body's hold ended (its fixed lease ran out, or its key
 *    was deleted): the first locks, the second must not be let in beside it (two owners).
 *
 * Every holder that believes it holds stays inside an OverlapProbe until the test lets it go:
 * `maxInside` 2 is two holders at once.
 */
const LEASES: ReadonlyArray<{ lease: string; options: LockOptions }> = [
  { lease: 'watchdog', options: {} },
  // Long enough that nothing expires during the test: the fixed lease's path, not its expiry.
  { lease: 'leaseTime', options: { leaseTime: 20_000 } },
];

describe.each(ENGINES())('hold handles: a lock object made in a body, after the body ($name)', (engine: ContractEngine) => {
  let handle: EngineHandle;
  let app: TestingModule;
  let other: TestingModule;
  let seq = 0;
  const fresh = (what: string) => `handles-after-${what}-${++seq}`;

  beforeAll(async () => {
    handle = await engine.start();
    [app, other] = await startApps(handle, 2, { watchdogTimeout: 600 });
  });
  afterAll(async () => {
    await other?.close();
    await app?.close();
    await handle?.stop();
  });

  it.each([PLAIN, WRITE].flatMap((kind) => LEASES.map(({ lease, options }) => ({ kind, lease, options, label: kind.kind }))))(
    'b. $label ($lease): a second timer asking through an object made in the body, after the body ended, waits for the first',
    async ({ kind, options }) => {
      const name = fresh(`b-${kind.kind}-${options.leaseTime ?? 'watchdog'}`);
      const probe = new OverlapProbe();
      const bodyEnded = deferred();
      const firstInside = deferred();
      let object!: Lock;
      let first!: Promise<string>;
      let second!: Promise<boolean>;
      const otherLock = kind.make(other, name);
      let otherHolds = false;
      try {
        await kind.run(
          app,
          name,
          async () => {
            object = kind.make(app, name);
            // Timer 1: re-enters while the body runs, and stays inside past the body's end.
            first = new Promise<void>((resolve) => setTimeout(resolve, 0)).then(async () => {
              await object.lock(options);
              firstInside.resolve();
              await probe.enter(name, 'timer 1');
              return settled(object.unlock());
            });
            // Timer 2: a continuation of the body that asks through the same object once the body ended.
            second = bodyEnded.promise.then(async () => {
              const got = await object.tryLock({ waitTime: 300, ...options });
              if (got) void probe.enter(name, 'timer 2');
              return got;
            });
            await firstInside.promise;
          },
          options,
        );
        bodyEnded.resolve();
        const secondGot = await second;
        // Timer 1 still inside: no other instance may get in either (its re-entry holds a count of its own).
        otherHolds = await otherLock.tryLock({ waitTime: 0 });
        const maxInside = probe.maxInside(name);
        probe.leave(0);
        const firstUnlock = await first;
        // Received on 46f6e41: { secondGot: true, maxInside: 2, otherGot: false, firstUnlock: 'resolved' }.
        expect({ secondGot, maxInside, otherGot: otherHolds, firstUnlock }).toEqual({ secondGot: false, maxInside: 1, otherGot: false, firstUnlock: 'resolved' });
        // Timer 1 left: nothing of the body or its timers is held any more.
        otherHolds = await otherLock.tryLock({ waitTime: 2_000 });
        expect(otherHolds).toBe(true);
      } finally {
        probe.holding = false;
        for (const { leave } of probe.entered) leave();
        bodyEnded.resolve();
        await Promise.allSettled([first, second]);
        if (otherHolds) await otherLock.unlock().catch(() => undefined);
        await kind.make(other, name).forceUnlock();
      }
    },
  );

  const ENDINGS = [
    // The body's fixed lease ran out while it runs: the test waits until its signal aborted.
    { ending: 'its leaseTime ran out', runOptions: { leaseTime: 400 } },
    // The key deleted behind it, not waited for: nothing here knows yet.
    { ending: 'its key was deleted', runOptions: {} },
  ];
  it.each([PLAIN, FAIR, WRITE].flatMap((kind) => ENDINGS.map((ending) => ({ kind, ...ending, label: kind.kind }))))(
    'd. $label: two objects made in one body do not both hold once the body\'s hold ended ($ending)',
    async ({ kind, runOptions }) => {
      const name = fresh(`d-${kind.kind}-${runOptions.leaseTime ?? 'del'}`);
      const probe = new OverlapProbe();
      const release: Array<() => Promise<unknown>> = [];
      try {
        const seen = await kind.run(
          app,
          name,
          async ({ signal }) => {
            const first = kind.make(app, name);
            const second = kind.make(app, name);
            if (runOptions.leaseTime !== undefined) await aborted(signal, "the body's signal to abort when its lease ran out");
            else await loseHold(handle, other, kind, name, 'del');
            await first.lock();
            release.push(() => first.unlock());
            void probe.enter(name, 'first object');
            const secondGot = await second.tryLock({ waitTime: 200 });
            if (secondGot) {
              release.push(() => second.unlock());
              void probe.enter(name, 'second object');
            }
            return { secondGot, maxInside: probe.maxInside(name), bodyTold: signal.aborted };
          },
          runOptions,
        );
        // Received on 46f6e41: { secondGot: true, maxInside: 2, bodyTold: true }.
        expect(seen).toEqual({ secondGot: false, maxInside: 1, bodyTold: true });
        // The first object's hold outlives the body and is released by its own unlock.
        await releasesSettled(app);
        expect(await settled(release.shift()!())).toBe('resolved');
        const otherLock = kind.make(other, name);
        expect(await otherLock.tryLock({ waitTime: 2_000 })).toBe(true);
        await otherLock.unlock();
      } finally {
        probe.holding = false;
        for (const { leave } of probe.entered) leave();
        for (const unlock of release) await unlock().catch(() => undefined);
        await kind.make(other, name).forceUnlock();
      }
    },
  );
});
