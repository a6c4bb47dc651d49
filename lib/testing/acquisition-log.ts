import {
  failedOutcome,
  settledOutcome,
  type AcquireOutcome,
  type AcquisitionOptions,
  type HoldTelemetry,
  type LockKind,
  type LockTelemetry,
} from '../metrics/lock-telemetry';

/** One acquisition as the testing kit saw it end. */
export interface RecordedAcquisition {
  /** The lock's name (a multi-lock's names joined with `,`). */
  readonly name: string;
  readonly kind: LockKind;
  /** `error` when it ended with another error (bad options, `LockUpgradeError`...). */
  readonly outcome: AcquireOutcome | 'error';
  /** The fencing token of an acquired reentrant, fair, write, RedLock or semaphore hold. */
  readonly fencingToken?: number;
}

/** Any member of it is itself; calling it does nothing. */
const NO_OP: unknown = new Proxy(() => undefined, { get: (_, property) => (property === 'then' ? undefined : NO_OP) });


/**
 * Every acquisition of the app's module, in the order they ended, taken where the library reports
 * them to OpenTelemetry: the same call, with the same kind, outcome and fencing token, for every
 * lock kind (a multi-lock once, not per member). The engine's real telemetry, when an SDK is
 * registered, still sees everything.
 */
export class AcquisitionLog {
  readonly entries: RecordedAcquisition[] = [];

  /** The telemetry object the engine uses: records, then hands over to `real` (if any). */
  tap(real: LockTelemetry | undefined): LockTelemetry {
    const log = this;
    const tap = {
      observe(
        kind: LockKind,
        name: string | readonly string[],
        options: AcquisitionOptions | undefined,
        fencingToken: () => number | undefined,
        acquire: () => Promise<boolean>,
      ): Promise<boolean> {
        const acquiring = real ? real.observe(kind, name, options, fencingToken, acquire) : acquire();
        const lockName = typeof name === 'string' ? name : name.join(',');
        return acquiring.then(
          (acquired) => {
            const token = acquired ? fencingToken() : undefined;
            log.entries.push({ name: lockName, kind, outcome: settledOutcome(acquired, options), ...(token !== undefined ? { fencingToken: token } : {}) });
            return acquired;
          },
          (error: unknown) => {
            log.entries.push({ name: lockName, kind, outcome: failedOutcome(error, options?.signal) ?? 'error' });
            throw error;
          },
        );
      },
      holdTelemetry(kind: LockKind, name: string, options: AcquisitionOptions | undefined): HoldTelemetry | undefined {
        return real?.holdTelemetry(kind, name, options);
      },
    };
    // The engine calls `observe` and `holdTelemetry`; anything else goes to the real telemetry, or,
    // without one, to a no-op (where the engine would have had no telemetry at all).
    return new Proxy(tap, {
      get: (target, property) =>
        property in target ? (target as Record<PropertyKey, unknown>)[property] : real ? Reflect.get(real, property) : NO_OP,
    }) as unknown as LockTelemetry;
  }

  clear(): void {
    this.entries.length = 0;
  }
}
