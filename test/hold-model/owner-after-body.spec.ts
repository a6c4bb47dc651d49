import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  DistributedLock,
  FairLockService,   LockService,
  ReadWriteLockService,
  SemaphoreService,
  type LockRunContext,
  type RunOptions,
  type WaitingRunOptions,
} from '../../lib';
import { LockTestingModule } from '../../lib/testing';
import { fairKind, multiKind, reentrantKind, redLockKind, writeKind } from '../support/contract-kinds';
import { ENGINES, redisEngine, type ContractEngine, type EngineHandle, type RunKind } from '../support/lock-contract';
import { createLockApp, deferred, releasesSettled, waitUntil } from '../support/lock-app';
import { OverlapProbe } from '../support/overlap-probe';

/**
 * An owner context entry counts only while the body that recorded it runs and its hold is current
 * (docs/architecture.md#owner-model). What a body starts and leaves running (an interval, a timer, a
 * promise nobody awaited) and that asks for the lock after the body ended is a new owner: excluded
 * like anyone else, and its `skipIfLocked` ticks that overlap skip.
 */
const KINDS: ReadonlyArray<RunKind> = [reentrantKind, fairKind, writeKind, multiKind, redLockKind];

/** `kind.run` with `skipIfLocked`: resolves `undefined` when the lock was busy. */
const runSkipping = <T>(kind: RunKind, app: TestingModule, name: string, fn: (context: LockRunContext) => Promise<T>): Promise<T | undefined> =>
  kind.run(app, name, fn, { skipIfLocked: true } satisfies RunOptions as WaitingRunOptions);

describe.each(ENGINES())('owner context after the body ended ($name)', (engine: ContractEngine) => {
  let handle: EngineHandle;
  let app: TestingModule;
  let locks: LockService;
  let seq = 0;
  const fresh = (what: string) => `after-body-${what}-${++seq}`;

  beforeAll(async () => {
    handle = await engine.start();
    app = await handle.createApp({ redis: handle.url, ...redLockKind.moduleOptions?.(handle.url) });
    locks = app.get(LockService);
  });
  afterAll(async () => {
    await app?.close();
    await handle?.stop();
  });
  afterEach(() => releasesSettled(app));

  it.each(KINDS)('$kind: an interval started in the body runs its ticks one at a time, and overlapping ticks skip', async (kind) => {
    const name = fresh(`interval-${kind.kind}`);
    const probe = new OverlapProbe();
    const ticks: Array<Promise<unknown>> = [];
    let skipped = 0;
    let interval: NodeJS.Timeout | undefined;
    try {
      await kind.run(app, name, async () => {
        interval = setInterval(() => {
          const tick = runSkipping(kind, app, name, () => probe.enter(name, 'ran'));
          ticks.push(tick.then((outcome) => outcome === undefined && (skipped += 1)));
        }, 5);
      });
      // The first tick after the body holds the lock (the probe keeps it inside); the next ones find it busy.
      await waitUntil(() => probe.entered.length + skipped >= 4, 10_000);
      expect(probe.entered.length).toBe(1);
      expect(probe.maxInside(name)).toBe(1);
      // Once it leaves, a later tick gets the lock: the ticks are owners like any other, not shut out.
      probe.leave(0);
      await waitUntil(() => probe.entered.length >= 2, 10_000);
      expect(probe.maxInside(name)).toBe(1);
    } finally {
      clearInterval(interval);
      probe.holding = false;
      for (const { leave } of probe.entered) leave();
      await Promise.all(ticks);
    }
  });

  it.each(KINDS)('$kind: promises the body left running that ask after it ended exclude each other', async (kind) => {
    const name = fresh(`unawaited-${kind.kind}`);
    const probe = new OverlapProbe();
    const bodyEnded = deferred();
    const firstInside = deferred();
    let first!: Promise<unknown>;
    let second!: Promise<unknown>;
    await kind.run(app, name, async () => {
      first = bodyEnded.promise.then(() =>
        runSkipping(kind, app, name, () => {
          firstInside.resolve();
          return probe.enter(name, 'first ran');
        }),
      );
      second = firstInside.promise.then(() => runSkipping(kind, app, name, () => probe.enter(name, 'second ran')));
    });
    let secondSkipped = false;
    void second.then((outcome) => (secondSkipped = outcome === undefined));
    bodyEnded.resolve();
    try {
      // Either the second skips (the lock is busy) or it got inside beside the first.
      await waitUntil(() => secondSkipped || probe.entered.length >= 2, 10_000);
      expect(probe.entered.length).toBe(1);
      expect(probe.maxInside(name)).toBe(1);
      expect(secondSkipped).toBe(true);
    } finally {
      probe.holding = false;
      for (const { leave } of probe.entered) leave();
    }
    expect(await first).toBe('first ran');
    await second;
  });

  it('getLock in a continuation after the body is a new owner, even while another lock object of the body still holds', async () => {
    const name = fresh('get-lock');
    const bodyEnded = deferred();
    let held!: ReturnType<LockService['getLock']>;
    let afterBody!: Promise<[boolean, boolean]>;
    await locks.run(name, async () => {
      // A hold of the body's owner that outlives the run's own hold.
      held = locks.getLock(name);
      await held.lock();
      afterBody = bodyEnded.promise.then(async () => {
        const late = locks.getLock(name);
        return [await late.isHeldByCurrentOwner(), await late.tryLock()];
      });
    });
    bodyEnded.resolve();
    try {
      expect(await afterBody).toEqual([false, false]);
    } finally {
      await held.unlock();
    }
  });

  it('read-write: a continuation of a runWrite body does not read inside a write another continuation holds', async () => {
    const rw = app.get(ReadWriteLockService);
    const name = fresh('rw');
    const bodyEnded = deferred();
    const writing = deferred();
    const leaveWrite = deferred();
    let writer!: Promise<unknown>;
    let reader!: Promise<unknown>;
    await rw.runWrite(name, async () => {
      writer = bodyEnded.promise.then(() =>
        rw.runWrite(name, async () => {
          writing.resolve();
          await leaveWrite.promise;
          return 'wrote';
        }),
      );
      reader = writing.promise.then(() => rw.runRead(name, async () => 'read', { skipIfLocked: true }));
    });
    bodyEnded.resolve();
    try {
      expect(await reader).toBeUndefined();
    } finally {
      leaveWrite.resolve();
    }
    expect(await writer).toBe('wrote');
  });

  it('current() reports only a running body: nothing after the body ended, the enclosing body while it runs', async () => {
    const fair = app.get(FairLockService);
    const semaphores = app.get(SemaphoreService);
    const innerEnded = deferred();
    const outerEnded = deferred();
    let duringOuter!: Promise<unknown>;
    let afterOuter!: Promise<unknown[]>;
    let afterPermits!: Promise<unknown>;
    await locks.run(fresh('outer'), async (outer) => {
      await fair.run(fresh('inner'), async () => {
        duringOuter = innerEnded.promise.then(() => locks.current());
        afterOuter = outerEnded.promise.then(() => [locks.current(), fair.current(), app.get(ReadWriteLockService).current()]);
      });
      innerEnded.resolve();
      expect(await duringOuter).toBe(outer);
    });
    outerEnded.resolve();
    expect(await afterOuter).toEqual([undefined, undefined, undefined]);
    const permitsEnded = deferred();
    await semaphores.run(fresh('permits'), async () => {
      afterPermits = permitsEnded.promise.then(() => semaphores.current());
    }, { permits: 1 });
    permitsEnded.resolve();
    expect(await afterPermits).toBeUndefined();
  });

  it('a body whose hold was lost asks again as a new owner, even while Redis still keeps the lost hold', async () => {
    const name = fresh('lost');
    const raw = handle.client();
    try {
      const again = await locks.run(
        name,
        async ({ signal }) => {
          // Redis keeps the lock past the lease behind the library's back: only this process counts it lost.
          await raw.pexpire(reentrantKind.redisKey(name), 60_000);
          await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
          return locks.run(name, async () => 'entered again', { skipIfLocked: true });
        },
        { leaseTime: 300 },
      );
      expect(again).toBeUndefined();
    } finally {
      await raw.del(reentrantKind.redisKey(name));
      raw.disconnect();
    }
  });

  it('control: inside the body, nested runs, getLock, a read inside the write and a timer re-enter', async () => {
    const name = fresh('nested');
    const rw = app.get(ReadWriteLockService);
    const counts = await locks.run(name, async () => {
      const nested = await locks.run(name, () => locks.getLock(name).getHoldCount());
      const bound = locks.getLock(name);
      const reentered = await bound.tryLock();
      await bound.unlock();
      // A timer the body waits for asks while the body still runs: the same owner.
      const fromTimer = await new Promise<number | undefined>((resolve, reject) => {
        setTimeout(() => runSkipping(reentrantKind, app, name, () => locks.getLock(name).getHoldCount()).then(resolve, reject), 1);
      });
      return { nested, reentered, fromTimer };
    });
    expect(counts).toEqual({ nested: 2, reentered: true, fromTimer: 2 });
    const doc = fresh('doc');
    const downgraded = await rw.runWrite(doc, () => rw.runRead(doc, async () => 'read inside write', { waitTime: 0 }));
    expect(downgraded).toBe('read inside write');
  });
});

/** A decorated job that starts an interval of decorated `skipIfLocked` ticks on the same lock. */
@Injectable()
class Ticker {
  readonly probe = new OverlapProbe();
  readonly ticks: Array<Promise<unknown>> = [];
  skipped = 0;
  interval: NodeJS.Timeout | undefined;

  @DistributedLock('ticker')
  async start(): Promise<void> {
    this.interval = setInterval(() => {
      this.ticks.push(this.tick().then((outcome) => outcome === undefined && (this.skipped += 1)));
    }, 5);
  }

  @DistributedLock('ticker', { skipIfLocked: true })
  tick(): Promise<string | undefined> {
    return this.probe.enter('ticker', 'ran');
  }
}

const DECORATED_APPS: ReadonlyArray<{ name: string; start(): Promise<{ app: TestingModule; stop(): Promise<void> }> }> = [
  {
    name: 'redis',
    async start() {
      const handle = await redisEngine.start();
      const app = await createLockApp({ redis: handle.url }, [Ticker]);
      return { app, stop: () => handle.stop() };
    },
  },
  {
    name: 'testing kit',
    async start() {
      const app = await Test.createTestingModule({ imports: [LockTestingModule.forRoot()], providers: [Ticker] }).compile();
      app.useLogger(false);
      await app.init();
      return { app, stop: async () => undefined };
    },
  },
];

describe.each(DECORATED_APPS)('decorated ticks started in a decorated body ($name)', (engine) => {
  let started: { app: TestingModule; stop(): Promise<void> };
  beforeAll(async () => {
    started = await engine.start();
  });
  afterAll(async () => {
    await started?.app.close();
    await started?.stop();
  });

  it('@DistributedLock: overlapping skipIfLocked ticks skip once the body that started them ended', async () => {
    const ticker = started.app.get(Ticker);
    const { probe } = ticker;
    try {
      await ticker.start();
      await waitUntil(() => probe.entered.length + ticker.skipped >= 4, 10_000);
      expect(probe.entered.length).toBe(1);
      expect(probe.maxInside('ticker')).toBe(1);
    } finally {
      clearInterval(ticker.interval);
      probe.holding = false;
      for (const { leave } of probe.entered) leave();
      await Promise.all(ticker.ticks);
    }
  });
});
