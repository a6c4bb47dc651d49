import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader, type DataPoint } from '@opentelemetry/sdk-metrics';
import {
  DistributedLock,
  DistributedSemaphore,
  FairLock,
  FairLockService,
  LockContext,
  LockModule,
  LockService,
  LockShutdownError,
  LockTimeoutError,
  LockUnavailableError,
  ReadLock,
  ReadWriteLockService,
  SemaphoreService,
  WriteLock,
  type LockRunContext,
  type RunOptions,
} from '../lib';
import type { RedLock } from '../lib/locks/red-lock';
import { runLocked } from '../lib/locks/run-locked';
import { LockEngine } from '../lib/engine/lock-engine';
import { createLockApp, releasesSettled, waitersQueued, waitUntil } from './support/lock-app';
import { freePort, startRedis, type TestRedis } from './support/redis-server';

const MIN_HOLD = 400;

/** Every run form, with how another process holds what it needs, and probes whether it is free. */
interface RunForm {
  readonly kind: string;
  run(app: TestingModule, name: string, fn: (context: LockRunContext) => unknown, options: RunOptions): Promise<unknown>;
  /** Holds, from `app`, what the form needs; resolves the release. */
  holdElsewhere(app: TestingModule, name: string): Promise<() => Promise<unknown>>;
  /** Whether `app` could take it now (given back at once). */
  free(app: TestingModule, name: string): Promise<boolean>;
}

const exclusive = (get: (app: TestingModule, name: string) => { lock(): Promise<void>; tryLock(o?: object): Promise<boolean>; unlock(): Promise<void> }) => ({
  async holdElsewhere(app: TestingModule, name: string) {
    const lock = get(app, name);
    await lock.lock();
    return () => lock.unlock();
  },
  async free(app: TestingModule, name: string) {
    const lock = get(app, name);
    if (!(await lock.tryLock())) return false;
    await lock.unlock();
    return true;
  },
});
const plain = exclusive((app, name) => app.get(LockService).getLock(name));
const writer = exclusive((app, name) => app.get(ReadWriteLockService).getReadWriteLock(name).writeLock());

const FORMS: RunForm[] = [
  { kind: 'LockService.run', run: (app, name, fn, o) => app.get(LockService).run(name, fn, o), ...plain },
  { kind: 'FairLockService.run', run: (app, name, fn, o) => app.get(FairLockService).run(name, fn, o), ...plain },
  { kind: 'runRead', run: (app, name, fn, o) => app.get(ReadWriteLockService).runRead(name, fn, o), ...writer },
  { kind: 'runWrite', run: (app, name, fn, o) => app.get(ReadWriteLockService).runWrite(name, fn, o), ...writer },
  {
    kind: 'LockService.run (multi-lock)',
    run: (app, name, fn, o) => app.get(LockService).run([`${name}:a`, `${name}:b`], fn, o),
    holdElsewhere: (app, name) => plain.holdElsewhere(app, `${name}:b`),
    free: async (app, name) => (await plain.free(app, `${name}:a`)) && (await plain.free(app, `${name}:b`)),
  },
  {
    kind: 'SemaphoreService.run',
    run: (app, name, fn, o) => app.get(SemaphoreService).run(name, fn, { ...o, permits: 1 }),
    async holdElsewhere(app, name) {
      const permit = await app.get(SemaphoreService).getSemaphore(name, { permits: 1 }).acquire();
      return () => permit.release();
    },
    async free(app, name) {
      const permit = await app.get(SemaphoreService).getSemaphore(name, { permits: 1 }).tryAcquire();
      if (!permit) return false;
      await permit.release();
      return true;
    },
  },
];

@Injectable()
class Jobs {
  runs = 0;
  readonly contexts: LockRunContext[] = [];

  @DistributedLock('job:#id', { skipIfLocked: true, minHoldTime: MIN_HOLD })
  async reentrant(id: string) {
    return this.ran(id);
  }

  @FairLock('job:#id', { skipIfLocked: true, minHoldTime: MIN_HOLD })
  async fair(id: string) {
    return this.ran(id);
  }

  @ReadLock('job:#id', { skipIfLocked: true, minHoldTime: MIN_HOLD })
  async read(id: string) {
    return this.ran(id);
  }

  @WriteLock('job:#id', { skipIfLocked: true, minHoldTime: MIN_HOLD })
  async write(id: string) {
    return this.ran(id);
  }

  @DistributedSemaphore('job:#id', { permits: 1, skipIfLocked: true, minHoldTime: MIN_HOLD })
  async semaphore(id: string, @LockContext() context?: LockRunContext) {
    this.contexts.push(context!);
    return this.ran(id);
  }

  private ran(id: string) {
    this.runs += 1;
    return `ran ${id}`;
  }
}

/** Bound to the app each shutdown test closes (a class is served by one open module at a time). */
@Injectable()
class ShutdownJobs {
  runs = 0;

  @DistributedLock('late-job', { skipIfLocked: true })
  async skipping() {
    this.runs += 1;
  }

  @DistributedSemaphore('late-permits', { permits: 1, skipIfLocked: true })
  async skippingPermits() {
    this.runs += 1;
  }

  @DistributedLock('late-job', { waitTime: 0 })
  async waiting() {
    this.runs += 1;
  }
}

const DECORATED: Array<{ method: 'reentrant' | 'fair' | 'read' | 'write' | 'semaphore'; form: RunForm }> = [
  { method: 'reentrant', form: FORMS[0] },
  { method: 'fair', form: FORMS[1] },
  { method: 'read', form: FORMS[2] },
  { method: 'write', form: FORMS[3] },
  { method: 'semaphore', form: FORMS[5] },
];

describe('skipIfLocked and minHoldTime', () => {
  let redis: TestRedis;
  let app: TestingModule;
  let other: TestingModule;
  let seq = 0;
  const fresh = () => `skip-${++seq}`;
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 60_000 });

  beforeAll(async () => {
    redis = await startRedis();
    // Registered before the module starts, so the module measures (see telemetry.spec.ts).
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
    // A default wait far above the skip tests' bounds: skipping must not wait for it.
    const options = { redis: redis.url, defaultWaitTime: 10_000, watchdogTimeout: 900, redlock: { clients: [redis.url] } };
    app = await createLockApp(options, [Jobs]);
    other = await createLockApp(options);
  });

  afterAll(async () => {
    await app?.close();
    await other?.close();
    await redis?.stop();
    metrics.disable();
  });

  /** Nothing logged above debug while `work` runs. */
  async function quietly<T>(work: () => Promise<T>): Promise<{ result: T; debug: string[] }> {
    const logger = app.get(LockEngine).logger;
    const debug = jest.spyOn(logger, 'debug').mockImplementation(() => undefined);
    const loud = (['log', 'warn', 'error'] as const).map((level) => jest.spyOn(logger, level).mockImplementation(() => undefined));
    try {
      const result = await work();
      for (const spy of loud) expect(spy).not.toHaveBeenCalled();
      return { result, debug: debug.mock.calls.map((call) => String(call[0])) };
    } finally {
      debug.mockRestore();
      for (const spy of loud) spy.mockRestore();
    }
  }

  describe.each(FORMS)('$kind', (form) => {
    it('skipIfLocked: a busy lock resolves undefined at once without running the body, logged at debug only', async () => {
      const name = fresh();
      const release = await form.holdElsewhere(other, name);
      const body = jest.fn();
      const startedAt = Date.now();
      const { result, debug } = await quietly(() => form.run(app, name, body, { skipIfLocked: true }));
      expect(result).toBeUndefined();
      expect(body).not.toHaveBeenCalled();
      // waitTime defaults to 0 when skipping (the module's default here is 10 s).
      expect(Date.now() - startedAt).toBeLessThan(5_000);
      expect(debug).toEqual([expect.stringContaining('was skipped (skipIfLocked)')]);
      // Without skipIfLocked the same call is a LockTimeoutError.
      await expect(form.run(app, name, body, { waitTime: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
      await release();
      // A free lock runs the body and resolves its result.
      await expect(form.run(app, name, async () => 'done', { skipIfLocked: true })).resolves.toBe('done');
    });

    it('skipIfLocked with a waitTime waits that long for the lock before skipping', async () => {
      const name = fresh();
      const release = await form.holdElsewhere(other, name);
      const running = form.run(app, name, async () => 'waited', { skipIfLocked: true, waitTime: 10_000 });
      setTimeout(() => void release(), 100);
      await expect(running).resolves.toBe('waited');
    });

    it('minHoldTime: a body that ends sooner leaves the lock held until minHoldTime after the acquisition, with no hold left in the process', async () => {
      const name = fresh();
      const startedAt = Date.now();
      await expect(form.run(app, name, async () => 'fast', { minHoldTime: MIN_HOLD })).resolves.toBe('fast');
      expect(await form.free(other, name)).toBe(false);
      // Not renewed and not released by this process: only the expiry in Redis frees it.
      expect(app.get(LockEngine).holds.size).toBe(0);
      await waitUntil(() => form.free(other, name), 10_000, 20);
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(MIN_HOLD - 10);
    });

    it('minHoldTime: the same after a body that threw, and a body longer than minHoldTime releases at once', async () => {
      const name = fresh();
      await expect(form.run(app, name, async () => Promise.reject(new Error('job failed')), { minHoldTime: MIN_HOLD })).rejects.toThrow('job failed');
      expect(await form.free(other, name)).toBe(false);
      await waitUntil(() => form.free(other, name), 10_000, 20);
      const slow = fresh();
      await form.run(app, slow, () => new Promise((resolve) => setTimeout(resolve, 150)), { minHoldTime: 100 });
      await releasesSettled(app); // another process sees the release once Redis ran it
      expect(await form.free(other, slow)).toBe(true);
    });

    it('minHoldTime must be a finite number >= 0 and not above leaseTime (checked at the call)', async () => {
      const name = fresh();
      const body = jest.fn();
      await expect(form.run(app, name, body, { minHoldTime: 2_000, leaseTime: 1_000 })).rejects.toThrow(
        'minHoldTime (2000 ms) must not exceed leaseTime (1000 ms)',
      );
      for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, '100' as unknown as number]) {
        await expect(form.run(app, name, body, { minHoldTime: bad })).rejects.toThrow('minHoldTime must be a finite number of milliseconds >= 0');
      }
      expect(body).not.toHaveBeenCalled();
      expect(await form.free(other, name)).toBe(true);
    });

    it('skipIfLocked does not hide Redis being unreachable: LockUnavailableError', async () => {
      const down = await createLockApp({ redis: `redis://127.0.0.1:${await freePort()}`, commandTimeout: 300 });
      try {
        await expect(form.run(down, fresh(), jest.fn(), { skipIfLocked: true })).rejects.toBeInstanceOf(LockUnavailableError);
      } finally {
        await down.close();
      }
    });
  });

  it('a re-entered hold with minHoldTime only drops its count: the outer run releases as usual', async () => {
    const name = fresh();
    const locks = app.get(LockService);
    await locks.run(name, () => locks.run(name, async () => 'inner', { minHoldTime: 5_000 }));
    await releasesSettled(app);
    expect(await plain.free(other, name)).toBe(true);
  });

  it('minHoldTime on a RedLock is kept on every master', async () => {
    const name = fresh();
    const redLock = app.get(LockService).getRedLock(name) as RedLock;
    await runLocked(app.get(LockEngine), redLock, async () => 'ok', { minHoldTime: MIN_HOLD });
    const raw = redis.client();
    try {
      const ttl = await raw.pttl(`lock:{${name}}`);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(MIN_HOLD);
      expect(await (other.get(LockService).getRedLock(name) as RedLock).tryLock()).toBe(false);
      await waitUntil(async () => (await raw.exists(`lock:{${name}}`)) === 0, 10_000, 20);
    } finally {
      raw.disconnect();
    }
  });

  describe.each(DECORATED)('@$method decorator', ({ method, form }) => {
    it('skips while held elsewhere (resolves undefined, body not run), runs when free, then keeps the lock for minHoldTime', async () => {
      const jobs = app.get(Jobs);
      const id = fresh();
      const release = await form.holdElsewhere(other, `job:${id}`);
      const before = jobs.runs;
      const { result } = await quietly(() => jobs[method](id));
      expect(result).toBeUndefined();
      expect(jobs.runs).toBe(before);
      await release();
      const startedAt = Date.now();
      await expect(jobs[method](id)).resolves.toBe(`ran ${id}`);
      expect(jobs.runs).toBe(before + 1);
      expect(await form.free(other, `job:${id}`)).toBe(false);
      // A second call while the minimum hold lasts skips too: the once-per-tick guarantee (readers
      // share the lock, so a kept read hold keeps out writers only).
      if (method !== 'read') await expect(jobs[method](id)).resolves.toBeUndefined();
      await waitUntil(() => form.free(other, `job:${id}`), 10_000, 20);
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(MIN_HOLD - 10);
    });
  });

  it('@DistributedSemaphore methods get their context through @LockContext, which is current() too', async () => {
    const jobs = app.get(Jobs);
    await app.get(SemaphoreService).run(
      'outer-sem',
      async (outer) => {
        expect(app.get(SemaphoreService).current()).toBe(outer);
        expect(app.get(LockService).current()).toBe(outer);
      },
      { permits: 1 },
    );
    const id = fresh();
    await jobs.semaphore(id);
    const context = jobs.contexts[jobs.contexts.length - 1];
    expect(context).toMatchObject({ name: `job:${id}` });
    expect(typeof context.fencingToken).toBe('number');
  });

  it('counts a skipped acquisition as lock.outcome "skipped", a timeout as "timeout"', async () => {
    const name = fresh();
    const release = await plain.holdElsewhere(other, name);
    const locks = app.get(LockService);
    await locks.run(name, jest.fn(), { skipIfLocked: true, metricName: 'skip:metric' });
    await locks.run([name, `${name}:x`], jest.fn(), { skipIfLocked: true, metricName: 'skip:metric' });
    await expect(locks.run(name, jest.fn(), { waitTime: 0, metricName: 'skip:metric' })).rejects.toBeInstanceOf(LockTimeoutError);
    const semaphoreHeld = await other.get(SemaphoreService).getSemaphore(name, { permits: 1 }).acquire();
    await app.get(SemaphoreService).run(name, jest.fn(), { permits: 1, skipIfLocked: true, metricName: 'skip:metric' });
    await semaphoreHeld.release();
    await release();
    await reader.forceFlush();
    const exports = metricExporter.getMetrics();
    const points = (exports[exports.length - 1]?.scopeMetrics ?? [])
      .flatMap((scope) => scope.metrics)
      .filter((metric) => metric.descriptor.name === 'lock.acquisitions')
      .flatMap((metric) => metric.dataPoints as DataPoint<number>[])
      .filter((point) => point.attributes['lock.key_template'] === 'skip:metric');
    const count = (kind: string, outcome: string) =>
      points.filter((p) => p.attributes['lock.kind'] === kind && p.attributes['lock.outcome'] === outcome).reduce((sum, p) => sum + p.value, 0);
    expect(count('reentrant', 'skipped')).toBe(1);
    expect(count('multi', 'skipped')).toBe(1);
    expect(count('semaphore', 'skipped')).toBe(1);
    expect(count('reentrant', 'timeout')).toBe(1);
  });

  describe('decorator options at bootstrap', () => {
    const bootstrap = async (provider: Function) => {
      const moduleRef = await Test.createTestingModule({ imports: [LockModule.forRoot({ redis: redis.url })], providers: [provider as never] }).compile();
      moduleRef.useLogger(false);
      try {
        await moduleRef.init();
      } finally {
        await moduleRef.close();
      }
    };

    it('minHoldTime above leaseTime fails, naming class, method and both values', async () => {
      @Injectable()
      class TooLong {
        @DistributedLock('a', { leaseTime: 1_000, minHoldTime: 5_000 })
        async job() {}
      }
      @Injectable()
      class TooLongPermits {
        @DistributedSemaphore('a', { permits: 1, leaseTime: 1_000, minHoldTime: 5_000 })
        async job() {}
      }
      await expect(bootstrap(TooLong)).rejects.toThrow(
        '@DistributedLock on TooLong.job: option "minHoldTime" (5000 ms) must not exceed "leaseTime" (1000 ms)',
      );
      await expect(bootstrap(TooLongPermits)).rejects.toThrow(
        '@DistributedSemaphore on TooLongPermits.job: option "minHoldTime" (5000 ms) must not exceed "leaseTime" (1000 ms)',
      );
    });

    it('a bad minHoldTime or skipIfLocked fails, naming the option and the value', async () => {
      @Injectable()
      class Negative {
        @WriteLock('a', { minHoldTime: -5 })
        async job() {}
      }
      @Injectable()
      class NotBoolean {
        @FairLock('a', { skipIfLocked: 'yes' as unknown as boolean })
        async job() {}
      }
      await expect(bootstrap(Negative)).rejects.toThrow('@DistributedLock on Negative.job: option "minHoldTime" must be a whole number of milliseconds >= 0 (got -5)');
      await expect(bootstrap(NotBoolean)).rejects.toThrow('@DistributedLock on NotBoolean.job: option "skipIfLocked" must be a boolean (got "yes")');
    });
  });

  // A @Cron tick can fire while the app closes (Nest stops the scheduler in the same shutdown phase
  // as this module, in either order): a call that skips when it cannot lock skips then too.
  describe('at shutdown', () => {
    /** Every log call of `moduleRef`'s module, by level, while `work` runs. */
    async function logged(moduleRef: TestingModule, work: () => Promise<void>): Promise<Record<string, string[]>> {
      const logger = moduleRef.get(LockEngine).logger;
      const levels = ['debug', 'log', 'warn', 'error'] as const;
      const spies = levels.map((level) => jest.spyOn(logger, level).mockImplementation(() => undefined));
      try {
        await work();
        return Object.fromEntries(levels.map((level, i) => [level, spies[i].mock.calls.map((call) => String(call[0]))]));
      } finally {
        for (const spy of spies) spy.mockRestore();
      }
    }

    it.each(FORMS)('$kind: waiting when the module shuts down, a skipping call resolves undefined (debug only), a waiting one rejects LockShutdownError', async (form) => {
      const closing = await createLockApp({ redis: redis.url });
      const name = fresh();
      const release = await form.holdElsewhere(other, name);
      const body = jest.fn();
      try {
        const skipping = form.run(closing, name, body, { skipIfLocked: true, waitTime: 30_000 });
        const waiting = form.run(closing, name, body, { waitTime: 30_000 }).catch((error: unknown) => error);
        await waitersQueued(closing, 2);
        const logs = await logged(closing, async () => {
          await closing.close();
          await expect(skipping).resolves.toBeUndefined();
          await expect(waiting).resolves.toBeInstanceOf(LockShutdownError);
        });
        expect(body).not.toHaveBeenCalled();
        expect(logs).toMatchObject({ log: [], warn: [], error: [] });
        expect(logs.debug).toContainEqual(expect.stringContaining('the module is shutting down, the work was skipped (skipIfLocked)'));
      } finally {
        await release();
      }
    });

    it('a call made once the shutdown began, before the module closed: skipping resolves undefined, waiting rejects LockShutdownError', async () => {
      const closing = await createLockApp({ redis: redis.url });
      const locks = closing.get(LockService);
      await locks.run('warm-up', async () => undefined);
      const shuttingDown = closing.get(LockEngine).onApplicationShutdown();
      const body = jest.fn();
      try {
        await expect(locks.run(fresh(), body, { skipIfLocked: true })).resolves.toBeUndefined();
        await expect(closing.get(SemaphoreService).run(fresh(), body, { permits: 1, skipIfLocked: true })).resolves.toBeUndefined();
        await expect(locks.run(fresh(), body)).rejects.toBeInstanceOf(LockShutdownError);
        await expect(locks.getLock(fresh()).tryLock()).rejects.toBeInstanceOf(LockShutdownError);
        expect(body).not.toHaveBeenCalled();
      } finally {
        await shuttingDown;
        await closing.close();
      }
    });

    it('a skipping decorated method called after its application closed resolves undefined without running; a waiting one rejects LockShutdownError', async () => {
      const closing = await createLockApp({ redis: redis.url }, [ShutdownJobs]);
      const jobs = closing.get(ShutdownJobs);
      await closing.close();
      await expect(jobs.skipping()).resolves.toBeUndefined();
      await expect(jobs.skippingPermits()).resolves.toBeUndefined();
      await expect(jobs.waiting()).rejects.toBeInstanceOf(LockShutdownError);
      expect(jobs.runs).toBe(0);
    });
  });
});
