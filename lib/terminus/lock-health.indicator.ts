import { Inject, Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { HealthIndicatorService } from '@nestjs/terminus';
import { HEALTH_PING_FAILED, HEALTH_RENEWALS_FAILING } from '../lock.messages';
import { withTimeout } from '../redis/bounded-call';
import { LockEngine } from '../engine/lock-engine';
import { monotonicNow } from '../monotonic-clock';

/** What the indicator reports besides `status`. */
export type LockHealthDetails = {
  /** Round trip of a PING on the command connection, in ms (absent when it failed). */
  pingMs?: number;
  /** The subscriber connection's state (`ready`, `connecting`, `reconnecting`, `wait`: not needed yet...). */
  subscriber: string;
  /** Age of the last watchdog round, in ms (null before the first one). */
  watchdogRoundAgeMs: number | null;
  /** Why it is down. */
  message?: string;
};

/**
 * A `@nestjs/terminus` health indicator for the locks (import it from `nestjs-redis-locks/terminus`
 * and list it in the providers of the module that has the health controller, next to
 * `TerminusModule`). `isHealthy()` is up with the command connection's PING time, the
 * subscriber's state and the last watchdog round's age; it is down, never throwing, when Redis does
 * not answer the PING within `commandTimeout` or when lock renewals have kept failing for longer
 * than one lease (`watchdogTimeout`): a holder may then have lost its locks without knowing.
 *
 * ```ts
 * @Get('health') @HealthCheck()
 * check() { return this.health.check([() => this.locks.isHealthy()]); }
 * ```
 */
@Injectable()
export class LockHealthIndicator {
  private engine: LockEngine | undefined;

  constructor(
    @Inject(HealthIndicatorService) private readonly health: HealthIndicatorService,
    @Inject(ModuleRef) private readonly moduleRef: ModuleRef,
  ) {}

  async isHealthy<const Key extends string = 'locks'>(key: Key = 'locks' as Key) {
    const indicator = this.health.check(key);
    const engine = this.engine ?? (this.engine = this.moduleRef.get<LockEngine, LockEngine>(LockEngine, { strict: false }));
    const { watchdog, options } = engine;
    const now = monotonicNow();
    const details: LockHealthDetails = {
      subscriber: engine.subscriberStatus,
      watchdogRoundAgeMs: watchdog.lastRoundAt === undefined ? null : Math.round(now - watchdog.lastRoundAt),
    };
    const startedAt = performance.now();
    try {
      await withTimeout(engine.client.ping(), options.commandTimeout);
      details.pingMs = Math.round((performance.now() - startedAt) * 10) / 10;
    } catch (error) {
      return indicator.down({ ...details, message: HEALTH_PING_FAILED(error instanceof Error ? error.message : String(error)) });
    }
    const failingSince = watchdog.failingSince;
    if (failingSince !== undefined && now - failingSince > options.watchdogTimeout) {
      return indicator.down({ ...details, message: HEALTH_RENEWALS_FAILING(Math.round(now - failingSince), options.watchdogTimeout) });
    }
    return indicator.up(details);
  }
}
