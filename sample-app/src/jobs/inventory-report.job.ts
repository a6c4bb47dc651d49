import { Injectable } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import Redis from 'ioredis';
import { DistributedLock } from '../../../lib';
import { InjectAppRedis } from '../redis/app-redis.provider';

/** Runs of the report per tick: field = the tick's second (epoch), value = how many instances ran it. */
export const REPORT_RUNS_KEY = 'sample:jobs:inventory-report:runs';
/** Which instance ran which tick: field = `<tick's second>:<its PORT>`, value = runs (1, unless it ran a tick twice). */
export const REPORT_RUNNERS_KEY = 'sample:jobs:inventory-report:runners';
/** The records above are a demo's window, not history: they go after ten idle minutes. */
const RECORD_TTL_S = 600;

/**
 * A job every instance schedules and exactly one runs per tick. `skipIfLocked`: the instances that
 * find the lock taken skip the tick quietly (no error log). `minHoldTime`: the lock stays held 500 ms
 * after the run began although the run takes a few ms, so an instance whose timer fires a little late
 * (a busy event loop, clock drift) still finds it taken instead of running the tick again. 500 ms is
 * longer than that lateness on one machine, and short enough that the next tick finds the lock free
 * even when this run itself started a few hundred ms late (under the demo's load it does).
 */
@Injectable()
export class InventoryReportJob {
  constructor(@InjectAppRedis() private readonly redis: Redis) {}

  @Cron(CronExpression.EVERY_SECOND, { name: 'inventory-report' })
  @DistributedLock('jobs:inventory-report', { skipIfLocked: true, minHoldTime: 500 })
  async report(): Promise<void> {
    // The work of a real report would go here; the demo only needs to see who ran which tick.
    const tick = String(Math.floor(Date.now() / 1000));
    await this.redis
      .multi()
      .hincrby(REPORT_RUNS_KEY, tick, 1)
      .hincrby(REPORT_RUNNERS_KEY, `${tick}:${process.env.PORT ?? 'local'}`, 1)
      .expire(REPORT_RUNS_KEY, RECORD_TTL_S)
      .expire(REPORT_RUNNERS_KEY, RECORD_TTL_S)
      .exec();
  }
}
