import { Injectable } from '@nestjs/common';
import { TestingModule } from '@nestjs/testing';
import { context, type Context, type ContextManager, metrics, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { AsyncLocalStorage } from 'node:async_hooks';
import Redis from 'ioredis';
import {
  DistributedLock,
  DistributedSemaphore,
  FairLockService,
  LockDeadlockError,
  LockLostError,
  LockService,
  LockTimeoutError,
  LockUnavailableError,
  SemaphoreService,
} from '../lib';
import { LockEngine } from '../lib/engine/lock-engine';
import { createLockApp, waitersQueued, waitUntil } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';

/** The smallest context manager (what @opentelemetry/context-async-hooks does), for active spans. */
class StorageContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.storage.run(ctx, () => fn.apply(thisArg, args));
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    return this;
  }
}

@Injectable()
class StockService {
  @DistributedLock('sku:#sku')
  async reserve(sku: string) {
    return sku;
  }
}

@Injectable()
class ExportService {
  @DistributedSemaphore('export:#tenantId', { permits: 2 })
  async export(tenantId: string) {
    return tenantId;
  }
}

describe('OpenTelemetry metrics and spans', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let other: TestingModule;
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 60_000 });
  const spanExporter = new InMemorySpanExporter();

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    // A module started before any SDK is registered measures nothing (no cost on the hot path)...
    other = await createLockApp({ redis: redis.url });
    expect(other.get(LockEngine).telemetry).toBeUndefined();
    // ...one started after main.ts registered an SDK uses it (taken when the module starts).
    context.setGlobalContextManager(new StorageContextManager());
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spanExporter)] }));
    app = await createLockApp({ redis: redis.url, watchdogTimeout: 600 }, [StockService, ExportService]);
    expect(app.get(LockEngine).telemetry).toBeDefined();
  });

  afterAll(async () => {
    await app?.close();
    await other?.close();
    await redis?.stop();
    metrics.disable();
    trace.disable();
    context.disable();
  });

  async function collected(): Promise<Map<string, DataPoint<unknown>[]>> {
    await reader.forceFlush();
    const exports = metricExporter.getMetrics();
    const byName = new Map<string, DataPoint<unknown>[]>();
    for (const scope of exports[exports.length - 1]?.scopeMetrics ?? []) {
      for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric.dataPoints as DataPoint<unknown>[]);
    }
    return byName;
  }

  const sumOf = (points: DataPoint<unknown>[] | undefined, attributes: Record<string, unknown>): number =>
    (points ?? [])
      .filter((p) => Object.entries(attributes).every(([k, v]) => p.attributes[k] === v))
      .reduce((sum, p) => sum + (typeof p.value === 'number' ? p.value : (p.value as { count: number }).count), 0);

  it('records acquired, timed-out, cancelled, unavailable and lost acquisitions with kind and template, never the key', async () => {
    const locks = app.get(LockService);
    const tracer = trace.getTracer('test');
    // acquired, inside a parent span
    let parentSpanId = '';
    await tracer.startActiveSpan('parent', async (parent) => {
      parentSpanId = parent.spanContext().spanId;
      await locks.run('order:1', () => undefined, { metricName: 'order:#id' });
      parent.end();
    });
    // decorator: its template
    await app.get(StockService).reserve('A1');
    // timeout
    const holder = other.get(LockService).getLock('order:2');
    await holder.lock();
    await expect(locks.run('order:2', () => undefined, { waitTime: 50, metricName: 'order:#id' })).rejects.toBeInstanceOf(LockTimeoutError);
    // cancelled
    const controller = new AbortController();
    const waiting = app.get(FairLockService).getLock('order:2').tryLock({ waitTime: 60_000, signal: controller.signal, metricName: 'order:#id' });
    await waitersQueued(app, 1);
    controller.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
    await holder.unlock();
    // lost
    await locks.run(
      'order:3',
      async ({ signal }) => {
        await raw.del('lock:{order:3}');
        await app.get(LockEngine).watchdog.renewNow();
        await waitUntil(() => signal.aborted);
      },
      { metricName: 'order:#id' },
    );
    // unavailable: a Redis that is gone
    const gone = await startRedis();
    const cut = await createLockApp({ redis: { host: gone.host, port: gone.port, maxRetriesPerRequest: 0 }, commandTimeout: 200 });
    await gone.stop();
    await expect(cut.get(LockService).getLock('order:4').tryLock({ metricName: 'order:#id' })).rejects.toBeInstanceOf(LockUnavailableError);
    await cut.close();

    const data = await collected();
    const acquisitions = data.get('lock.acquisitions');
    const template = { 'lock.key_template': 'order:#id' };
    expect(sumOf(acquisitions, { ...template, 'lock.kind': 'reentrant', 'lock.outcome': 'acquired' })).toBe(2);
    expect(sumOf(acquisitions, { ...template, 'lock.outcome': 'timeout' })).toBe(1);
    expect(sumOf(acquisitions, { ...template, 'lock.kind': 'fair', 'lock.outcome': 'cancelled' })).toBe(1);
    expect(sumOf(acquisitions, { ...template, 'lock.outcome': 'unavailable' })).toBe(1);
    expect(sumOf(acquisitions, { 'lock.key_template': 'sku:#sku', 'lock.outcome': 'acquired' })).toBe(1);
    expect(sumOf(data.get('lock.lost'), template)).toBe(1);
    expect(sumOf(data.get('lock.wait.duration'), { ...template, 'lock.outcome': 'timeout' })).toBe(1);
    expect(sumOf(data.get('lock.hold.duration'), template)).toBe(2);
    expect(sumOf(data.get('lock.held'), {})).toBe(0);
    expect(sumOf(data.get('lock.waiting'), {})).toBe(0);
    const timeoutWait = data.get('lock.wait.duration')!.find((p) => p.attributes['lock.outcome'] === 'timeout')!;
    expect((timeoutWait.value as { sum: number }).sum).toBeGreaterThanOrEqual(0.04);

    const spans = spanExporter.getFinishedSpans().filter((s) => s.name.startsWith('lock.acquire'));
    const first = spans.find((s) => s.attributes['lock.outcome'] === 'acquired' && s.name === 'lock.acquire order:#id')!;
    expect(first.parentSpanContext?.spanId ?? (first as unknown as { parentSpanId?: string }).parentSpanId).toBe(parentSpanId);
    expect(typeof first.attributes['lock.fencing_token']).toBe('number');
    expect(typeof first.attributes['lock.wait.duration']).toBe('number');
    expect(spans.map((s) => s.attributes['lock.outcome']).sort()).toEqual(
      ['acquired', 'acquired', 'acquired', 'cancelled', 'timeout', 'unavailable'].sort(),
    );

    // No concrete key anywhere: every attribute value is a template, a kind or an outcome.
    const values = [
      ...[...data.values()].flat().flatMap((p) => Object.values(p.attributes)),
      ...spans.flatMap((s) => Object.values(s.attributes)),
      ...spans.map((s) => s.name),
    ].map(String);
    for (const key of ['order:1', 'order:2', 'order:3', 'order:4', 'sku:A1']) {
      expect(values.filter((v) => v.includes(key))).toEqual([]);
    }
  });

  it('semaphores: the same instruments and spans with lock.kind semaphore, by template, never the key', async () => {
    const semaphores = app.get(SemaphoreService);
    const kind = { 'lock.kind': 'semaphore' };
    const quota = { ...kind, 'lock.key_template': 'quota:#id' };
    // acquired: run() with metricName, and the decorator with its template
    await semaphores.run('quota:1', () => undefined, { permits: 1, metricName: 'quota:#id' });
    await expect(app.get(ExportService).export('acme')).resolves.toBe('acme');
    // held while held, and a waiter counted in lock.waiting while it waits
    const holder = await semaphores.getSemaphore('quota:2', { permits: 1 }).acquire({ metricName: 'quota:#id' });
    await expect(semaphores.run('quota:2', () => undefined, { permits: 1, waitTime: 50, metricName: 'quota:#id' })).rejects.toBeInstanceOf(
      LockTimeoutError,
    );
    const controller = new AbortController();
    const waiting = semaphores.getSemaphore('quota:2', { permits: 1 }).acquire({ waitTime: 60_000, signal: controller.signal, metricName: 'quota:#id' });
    await waitUntil(async () => (await semaphores.inspect('quota:2')).waiters.length === 1);
    let data = await collected();
    expect(sumOf(data.get('lock.held'), quota)).toBe(1);
    expect(sumOf(data.get('lock.waiting'), quota)).toBe(1);
    // cancelled
    controller.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
    await holder.release();
    // lost: the permit vanishes from Redis, the next renewal finds it gone
    await semaphores.run(
      'quota:3',
      async ({ signal }) => {
        await raw.del('lock:sem:{quota:3}', 'lock:sem:{quota:3}:leases');
        await app.get(LockEngine).watchdog.renewNow();
        await waitUntil(() => signal.aborted);
        expect(signal.reason).toBeInstanceOf(LockLostError);
      },
      { permits: 1, metricName: 'quota:#id' },
    );
    // unavailable: a Redis that is gone
    const gone = await startRedis();
    const cut = await createLockApp({ redis: { host: gone.host, port: gone.port, maxRetriesPerRequest: 0 }, commandTimeout: 200 });
    await gone.stop();
    await expect(cut.get(SemaphoreService).getSemaphore('quota:4', { permits: 1 }).tryAcquire({ metricName: 'quota:#id' })).rejects.toBeInstanceOf(
      LockUnavailableError,
    );
    await cut.close();

    data = await collected();
    const acquisitions = data.get('lock.acquisitions');
    expect(sumOf(acquisitions, { ...quota, 'lock.outcome': 'acquired' })).toBe(3);
    expect(sumOf(acquisitions, { ...quota, 'lock.outcome': 'timeout' })).toBe(1);
    expect(sumOf(acquisitions, { ...quota, 'lock.outcome': 'cancelled' })).toBe(1);
    expect(sumOf(acquisitions, { ...quota, 'lock.outcome': 'unavailable' })).toBe(1);
    expect(sumOf(acquisitions, { ...kind, 'lock.key_template': 'export:#tenantId', 'lock.outcome': 'acquired' })).toBe(1);
    expect(sumOf(data.get('lock.wait.duration'), { ...quota, 'lock.outcome': 'timeout' })).toBe(1);
    expect(sumOf(data.get('lock.hold.duration'), quota)).toBe(3);
    expect(sumOf(data.get('lock.hold.duration'), { ...kind, 'lock.key_template': 'export:#tenantId' })).toBe(1);
    expect(sumOf(data.get('lock.lost'), quota)).toBe(1);
    expect(sumOf(data.get('lock.held'), kind)).toBe(0);
    expect(sumOf(data.get('lock.waiting'), kind)).toBe(0);

    const spans = spanExporter.getFinishedSpans().filter((s) => s.attributes['lock.kind'] === 'semaphore');
    expect(spans.map((s) => `${s.name} ${String(s.attributes['lock.outcome'])}`).sort()).toEqual(
      [
        'lock.acquire export:#tenantId acquired',
        'lock.acquire quota:#id acquired',
        'lock.acquire quota:#id acquired',
        'lock.acquire quota:#id acquired',
        'lock.acquire quota:#id cancelled',
        'lock.acquire quota:#id timeout',
        'lock.acquire quota:#id unavailable',
      ].sort(),
    );
    for (const span of spans) expect(typeof span.attributes['lock.wait.duration']).toBe('number');
    const tokens = spans.filter((s) => s.attributes['lock.outcome'] === 'acquired').map((s) => s.attributes['lock.fencing_token']);
    expect(tokens.every((token) => typeof token === 'number')).toBe(true);
    expect(spans.filter((s) => s.attributes['lock.outcome'] !== 'acquired').every((s) => s.attributes['lock.fencing_token'] === undefined)).toBe(true);

    // No concrete key in any attribute or span name by default.
    const values = [
      ...[...data.values()].flat().flatMap((p) => Object.values(p.attributes)),
      ...spans.flatMap((s) => Object.values(s.attributes)),
      ...spans.map((s) => s.name),
    ].map(String);
    for (const key of ['quota:1', 'quota:2', 'quota:3', 'quota:4', 'export:acme']) {
      expect(values.filter((v) => v.includes(key))).toEqual([]);
    }
  });

  /**
   * The refusal built by hand on a lock's own acquisition (the detection is tested elsewhere): what
   * the telemetry sees is the acquisition rejecting with it.
   */
  const refuseAsDeadlock = (lock: object, ...names: string[]) =>
    jest
      .spyOn(lock as { acquire: () => Promise<boolean> }, 'acquire')
      .mockRejectedValueOnce(new LockDeadlockError(names.map((name, i) => ({ lock: name, owner: `c0ffee:${i + 1}` }))));

  it('a wait refused as a deadlock: outcome deadlock, and a lock.deadlock event on its span without the names by default', async () => {
    const lock = app.get(LockService).getLock('ledger:1');
    refuseAsDeadlock(lock, 'ledger:2', 'ledger:1');
    await expect(lock.tryLock({ waitTime: 1_000, metricName: 'ledger:#id' })).rejects.toBeInstanceOf(LockDeadlockError);

    const data = await collected();
    const template = { 'lock.key_template': 'ledger:#id' };
    expect(sumOf(data.get('lock.acquisitions'), { ...template, 'lock.kind': 'reentrant', 'lock.outcome': 'deadlock' })).toBe(1);
    expect(sumOf(data.get('lock.wait.duration'), { ...template, 'lock.outcome': 'deadlock' })).toBe(1);
    expect(sumOf(data.get('lock.waiting'), template)).toBe(0);
    const span = spanExporter.getFinishedSpans().find((s) => s.name === 'lock.acquire ledger:#id')!;
    expect(span.attributes['lock.outcome']).toBe('deadlock');
    expect(span.status).toMatchObject({ code: 2, message: 'LockDeadlockError' }); // SpanStatusCode.ERROR
    expect(span.events.map((event) => [event.name, event.attributes])).toEqual([['lock.deadlock', { 'lock.deadlock.size': 2 }]]);
    const values = [...span.events.flatMap((e) => Object.values(e.attributes ?? {})), ...Object.values(span.attributes)].map(String);
    expect(values.filter((v) => v.includes('ledger:1') || v.includes('ledger:2'))).toEqual([]);
  });

  it('a real cycle in one process (A->B / B->A): the refused acquisition is counted deadlock, with its span event', async () => {
    const locks = app.get(LockService);
    let inA = false;
    let inB = false;
    const half = (first: string, second: string, mine: () => void, theirs: () => boolean) =>
      locks.run(
        first,
        async () => {
          mine();
          await waitUntil(theirs);
          await locks.run(second, () => undefined, { waitTime: 20_000, metricName: 'cycle:#id' });
        },
        { waitTime: 20_000, metricName: 'cycle:#id' },
      );
    const results = await Promise.allSettled([
      half('cycle:a', 'cycle:b', () => (inA = true), () => inB),
      half('cycle:b', 'cycle:a', () => (inB = true), () => inA),
    ]);
    expect(results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason)).toEqual([expect.any(LockDeadlockError)]);
    const data = await collected();
    expect(sumOf(data.get('lock.acquisitions'), { 'lock.key_template': 'cycle:#id', 'lock.outcome': 'deadlock' })).toBe(1);
    const refused = spanExporter.getFinishedSpans().filter((s) => s.name === 'lock.acquire cycle:#id' && s.attributes['lock.outcome'] === 'deadlock');
    expect(refused.map((s) => s.events.map((e) => [e.name, e.attributes]))).toEqual([[['lock.deadlock', { 'lock.deadlock.size': 2 }]]]);
  });

  it('with telemetryLockNames on, the lock.deadlock event names the cycle\'s locks in order', async () => {
    const named = await createLockApp({ redis: redis.url, telemetryLockNames: true });
    try {
      const lock = named.get(LockService).getLock('ledger:3');
      refuseAsDeadlock(lock, 'ledger:4', 'ledger:5', 'ledger:3');
      await expect(lock.tryLock({ waitTime: 1_000, metricName: 'ledger:#id' })).rejects.toBeInstanceOf(LockDeadlockError);
    } finally {
      await named.close();
    }
    const span = spanExporter.getFinishedSpans().find((s) => s.attributes['lock.name'] === 'ledger:3')!;
    expect(span.attributes['lock.outcome']).toBe('deadlock');
    expect(span.events.map((event) => [event.name, event.attributes])).toEqual([
      ['lock.deadlock', { 'lock.deadlock.size': 3, 'lock.deadlock.locks': ['ledger:4', 'ledger:5', 'ledger:3'] }],
    ]);
    const points = (await collected()).get('lock.acquisitions')!;
    expect(points.some((p) => p.attributes['lock.name'] === 'ledger:3' && p.attributes['lock.outcome'] === 'deadlock')).toBe(true);
  });

  it('records the concrete name only when telemetryLockNames is on', async () => {
    const named = await createLockApp({ redis: redis.url, telemetryLockNames: true });
    await named.get(LockService).run('invoice:9', () => undefined, { metricName: 'invoice:#id' });
    await named.close();
    const points = (await collected()).get('lock.acquisitions')!;
    expect(points.some((p) => p.attributes['lock.name'] === 'invoice:9' && p.attributes['lock.key_template'] === 'invoice:#id')).toBe(true);
  });
});
