import { LockDeadlockError, LockNameConflictError, LockShutdownError, LockUnavailableError } from '../errors';

// The few shapes of `@opentelemetry/api` used here, declared locally: the API is an optional peer
// dependency, so the library's type declarations must not import it.
type Attributes = Record<string, string | number | boolean>;
/** A span event's attributes: OpenTelemetry also takes arrays of strings. */
type EventAttributes = Record<string, string | number | boolean | string[]>;
interface Counter {
  add(value: number, attributes?: Attributes): void;
}
type UpDownCounter = Counter;
interface Histogram {
  record(value: number, attributes?: Attributes): void;
}
interface Meter {
  createHistogram(name: string, options?: { unit?: string; description?: string }): Histogram;
  createCounter(name: string, options?: { description?: string }): Counter;
  createUpDownCounter(name: string, options?: { description?: string }): UpDownCounter;
}
interface Span {
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  addEvent(name: string, attributes?: EventAttributes): unknown;
  end(): void;
}
interface Tracer {
  startSpan(name: string, options?: { attributes?: Attributes }): Span;
}
interface OtelApi {
  metrics: { getMeterProvider(): { getMeter(name: string, version?: string): Meter }; getMeter(name: string, version?: string): Meter };
  trace: { getTracerProvider(): object; getTracer(name: string, version?: string): Tracer };
  createNoopMeter(): Meter;
  ProxyTracerProvider: new () => { getDelegate(): object };
  SpanStatusCode: { ERROR: number };
}

/** The `lock.kind` attribute. */
export type LockKind = 'reentrant' | 'fair' | 'read' | 'write' | 'multi' | 'redlock' | 'semaphore';
/**
 * The `lock.outcome` attribute of `lock.acquisitions` and `lock.wait.duration`. `deadlock`: the wait
 * was refused because it closed a cycle (`LockDeadlockError`, docs/deadlocks.md). `conflict`: a key
 * of the lock holds something else (`LockNameConflictError`), which is not Redis being unavailable.
 */
export type AcquireOutcome = 'acquired' | 'timeout' | 'unavailable' | 'cancelled' | 'skipped' | 'deadlock' | 'conflict';

/** `lock.key_template` when the caller gave none (no decorator template, no `metricName`). */
export const NO_TEMPLATE = '(none)';

/**
 * Set on the options a multi-lock passes to its members: the multi-lock's acquisition is the one
 * counted and traced; its members' holds are still counted (`lock.held`, `lock.hold.duration`).
 */
export const MEMBER_ACQUISITION = Symbol('nestjs-redis-locks:member-acquisition');

/**
 * Set on the options of an acquisition made for `skipIfLocked`: not acquiring is then the expected
 * outcome on every replica but one, counted as `skipped` rather than `timeout`.
 */
export const SKIPS_IF_LOCKED = Symbol('nestjs-redis-locks:skips-if-locked');

/** What an acquisition says about itself to the telemetry. */
export interface AcquisitionOptions {
  readonly signal?: AbortSignal;
  readonly metricName?: string;
  readonly [MEMBER_ACQUISITION]?: boolean;
  readonly [SKIPS_IF_LOCKED]?: boolean;
}

/** Loads the optional peer `@opentelemetry/api`; undefined when the application does not have it. */
function loadApi(): OtelApi | undefined {
  try {
    // Required when the module starts, not at import: an SDK registered in main.ts is picked up.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('@opentelemetry/api') as OtelApi;
  } catch {
    return undefined;
  }
}

/** One hold's share of the telemetry: counted in `lock.held` while it lasts, then its duration. */
export class HoldTelemetry {
  private startedAt = 0;

  constructor(
    private readonly telemetry: LockTelemetry,
    readonly attributes: Attributes,
  ) {}

  held(): void {
    this.startedAt = performance.now();
    this.telemetry.held.add(1, this.attributes);
  }

  ended(): void {
    this.telemetry.held.add(-1, this.attributes);
    this.telemetry.holdDuration.record((performance.now() - this.startedAt) / 1000, this.attributes);
  }

  lost(): void {
    this.telemetry.lost.add(1, this.attributes);
  }
}

/**
 * The library's OpenTelemetry instruments (docs/architecture.md#introspection), taken from the global API when the module
 * starts. `LockTelemetry.start` returns undefined when `@opentelemetry/api` is missing or neither a
 * meter provider nor a tracer provider is registered: the lock code then skips telemetry entirely
 * (one `undefined` check per acquisition), which keeps the no-op cost out of the hot path.
 */
export class LockTelemetry {
  readonly waitDuration: Histogram;
  readonly holdDuration: Histogram;
  readonly acquisitions: Counter;
  readonly lost: Counter;
  readonly held: UpDownCounter;
  readonly waiting: UpDownCounter;
  private readonly tracer: Tracer | undefined;

  private constructor(
    private readonly api: OtelApi,
    withMeter: boolean,
    withTracer: boolean,
    /** Adds the concrete lock name (`lock.name`) to every attribute set: high cardinality, opt-in. */
    private readonly lockNames: boolean,
    version: string,
  ) {
    const meter = withMeter ? api.metrics.getMeter('nestjs-redis-locks', version) : api.createNoopMeter();
    this.waitDuration = meter.createHistogram('lock.wait.duration', {
      unit: 's',
      description: 'Time from asking for a lock to the acquisition outcome',
    });
    this.holdDuration = meter.createHistogram('lock.hold.duration', { unit: 's', description: 'Time a lock was held' });
    this.acquisitions = meter.createCounter('lock.acquisitions', { description: 'Acquisitions by outcome' });
    this.lost = meter.createCounter('lock.lost', { description: 'Locks lost while held (renewal found them gone)' });
    this.held = meter.createUpDownCounter('lock.held', { description: 'Locks held by this instance' });
    this.waiting = meter.createUpDownCounter('lock.waiting', { description: 'Acquisitions in progress (not yet acquired)' });
    this.tracer = withTracer ? api.trace.getTracer('nestjs-redis-locks', version) : undefined;
  }

  /** The instruments of the globally registered providers, or undefined when there are none. */
  static start(options: { lockNames: boolean; version?: string }): LockTelemetry | undefined {
    const api = loadApi();
    if (!api) return undefined;
    const withMeter = !isNoopMeterProvider(api);
    const withTracer = !isNoopTracerProvider(api);
    if (!withMeter && !withTracer) return undefined;
    return new LockTelemetry(api, withMeter, withTracer, options.lockNames, options.version ?? '0');
  }

  attributes(kind: LockKind, name: string | readonly string[], options: AcquisitionOptions | undefined): Attributes {
    const attributes: Attributes = { 'lock.kind': kind, 'lock.key_template': options?.metricName ?? NO_TEMPLATE };
    if (this.lockNames) attributes['lock.name'] = typeof name === 'string' ? name : name.join(',');
    return attributes;
  }

  /**
   * The `lock.deadlock` span event's attributes: `lock.deadlock.size` (how many locks the cycle
   * has) always, and the cycle's names in order (`lock.deadlock.locks`) only when
   * `telemetryLockNames` is on, like `lock.name` (a name may carry an order id or a user's input).
   */
  deadlockEventAttributes(error: LockDeadlockError): EventAttributes {
    const attributes: EventAttributes = { 'lock.deadlock.size': error.lockName.length };
    if (this.lockNames) attributes['lock.deadlock.locks'] = [...error.lockName];
    return attributes;
  }

  holdTelemetry(kind: LockKind, name: string, options: AcquisitionOptions | undefined): HoldTelemetry {
    return new HoldTelemetry(this, this.attributes(kind, name, options));
  }

  /**
   * Measures one acquisition: `lock.waiting` while it runs, then `lock.acquisitions` and
   * `lock.wait.duration` with its outcome, inside a span `lock.acquire <template>` (a child of the
   * active span) carrying the outcome, the wait and the fencing token. A wait refused as a deadlock
   * also gets a `lock.deadlock` event on that span.
   */
  async observe(
    kind: LockKind,
    name: string | readonly string[],
    options: AcquisitionOptions | undefined,
    fencingToken: () => number | undefined,
    acquire: () => Promise<boolean>,
  ): Promise<boolean> {
    const attributes = this.attributes(kind, name, options);
    const span: Span | undefined = this.tracer?.startSpan(`lock.acquire ${attributes['lock.key_template']}`, {
      attributes,
    });
    const startedAt = performance.now();
    this.waiting.add(1, attributes);
    let outcome: AcquireOutcome | undefined;
    let failure: unknown;
    try {
      const acquired = await acquire();
      outcome = settledOutcome(acquired, options);
      return acquired;
    } catch (error) {
      failure = error;
      outcome = failedOutcome(error, options?.signal);
      throw error;
    } finally {
      const waitS = (performance.now() - startedAt) / 1000;
      this.waiting.add(-1, attributes);
      if (outcome) {
        const withOutcome = { ...attributes, 'lock.outcome': outcome };
        this.acquisitions.add(1, withOutcome);
        this.waitDuration.record(waitS, withOutcome);
      }
      if (span) {
        span.setAttribute('lock.wait.duration', waitS);
        if (outcome) span.setAttribute('lock.outcome', outcome);
        const token = outcome === 'acquired' ? fencingToken() : undefined;
        if (token !== undefined) span.setAttribute('lock.fencing_token', token);
        if (failure instanceof LockDeadlockError) span.addEvent('lock.deadlock', this.deadlockEventAttributes(failure));
        if (failure !== undefined && outcome !== 'cancelled') {
          span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: failure instanceof Error ? failure.name : String(failure) });
        }
        span.end();
      }
    }
  }
}

/** The `lock.outcome` of an acquisition that settled: acquired, or not (a skip when the caller skips). */
export function settledOutcome(acquired: boolean, options: AcquisitionOptions | undefined): AcquireOutcome {
  return acquired ? 'acquired' : options?.[SKIPS_IF_LOCKED] ? 'skipped' : 'timeout';
}

/** The `lock.outcome` of an acquisition that failed; `undefined` for an error that is none of them. */
export function failedOutcome(error: unknown, signal: AbortSignal | undefined): AcquireOutcome | undefined {
  if (signal?.aborted && error === signal.reason) return 'cancelled';
  if (error instanceof LockShutdownError) return 'cancelled';
  if (error instanceof LockUnavailableError) return 'unavailable';
  if (error instanceof LockDeadlockError) return 'deadlock';
  if (error instanceof LockNameConflictError) return 'conflict';
  return undefined;
}

function isNoopMeterProvider(api: OtelApi): boolean {
  const meter = api.metrics.getMeterProvider().getMeter('nestjs-redis-locks');
  return meter.constructor === api.createNoopMeter().constructor;
}

function isNoopTracerProvider(api: OtelApi): boolean {
  const provider = api.trace.getTracerProvider() as { getDelegate?: () => object };
  const noop = new api.ProxyTracerProvider().getDelegate();
  return typeof provider.getDelegate === 'function' ? provider.getDelegate() === noop : provider === noop;
}

/**
 * Runs `acquire` under the telemetry when there is one (a member of a multi-lock is not measured on
 * its own: the multi-lock's acquisition is).
 */
export function observeAcquire(
  telemetry: LockTelemetry | undefined,
  kind: LockKind,
  name: string | readonly string[],
  options: AcquisitionOptions | undefined,
  fencingToken: () => number | undefined,
  acquire: () => Promise<boolean>,
): Promise<boolean> {
  if (!telemetry || options?.[MEMBER_ACQUISITION]) return acquire();
  return telemetry.observe(kind, name, options, fencingToken, acquire);
}
