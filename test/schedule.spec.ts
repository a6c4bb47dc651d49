import { Injectable } from '@nestjs/common';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { Test, type TestingModule } from '@nestjs/testing';
import type { ChildProcess } from 'node:child_process';
import { DistributedLock, LockModule, LockService, type LockRunContext } from '../lib';
import { LockEngine } from '../lib/engine/lock-engine';
import { completion, printed, spawnFixture } from './support/child-process';
import { sleep, waitUntil } from './support/lock-app';
import { startRedis, type TestRedis } from './support/redis-server';

/** Replicas' clocks: one on time, two 150 ms and 300 ms behind. */
const SKEWS = [0, 150, 300];
/** Longer than the worst skew (300 ms) plus timer jitter, shorter than the 1 s interval. */
const MIN_HOLD = 700;
/** How long the three replicas are watched together. */
const WATCH_MS = 6_000;

interface Observation {
  /** Runs per tick (second) during which all three replicas were scheduled. */
  runs: number[];
  skips: number[];
  errors: string[];
}

/**
 * Three replicas of one app, each scheduling the same `@Cron` every second under a lock that skips
 * when busy, watched for `WATCH_MS` once all three are up; runs and skips are counted per tick.
 */
async function observeReplicas(redis: TestRedis, minHoldTime: number, prefix: string): Promise<Observation> {
  const replicas: ChildProcess[] = SKEWS.map((skew) => spawnFixture('cron-replica', [redis.url, String(skew), String(minHoldTime), prefix]));
  const outputs = replicas.map((replica) => completion(replica));
  try {
    await Promise.all(replicas.map((replica) => printed(replica, 'ready')));
    const startedAt = Date.now();
    await sleep(WATCH_MS); // the observation window itself, not a wait for a condition
    const endedAt = Date.now();
    for (const replica of replicas) replica.kill('SIGINT');
    const reports = (await Promise.all(outputs)).map((out) => JSON.parse(out.trim().split('\n').pop()!) as { errors: string[] });
    const raw = redis.client();
    const [runs, skips] = await Promise.all([raw.hgetall(`${prefix}:runs`), raw.hgetall(`${prefix}:skips`)]);
    raw.disconnect();
    // Ticks whose whole second (the latest replica fires 300 ms into it) lies in the window.
    const ticks: number[] = [];
    for (let second = Math.ceil(startedAt / 1000); (second + 1) * 1000 <= endedAt; second++) ticks.push(second);
    return {
      runs: ticks.map((t) => Number(runs[t] ?? 0)),
      skips: ticks.map((t) => Number(skips[t] ?? 0)),
      errors: reports.flatMap((report) => report.errors),
    };
  } finally {
    for (const replica of replicas) if (replica.exitCode === null) replica.kill('SIGKILL');
  }
}

describe('@nestjs/schedule: a @Cron job on three replicas', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    redis = await startRedis();
  });

  afterAll(async () => {
    await redis?.stop();
  });

  it('with skipIfLocked and minHoldTime, every tick runs exactly once, the others skip, nothing is logged as an error', async () => {
    const { runs, skips, errors } = await observeReplicas(redis, MIN_HOLD, 'with-min-hold');
    expect(runs.length).toBeGreaterThanOrEqual(3);
    expect(runs).toEqual(runs.map(() => 1));
    expect(skips).toEqual(skips.map(() => SKEWS.length - 1));
    expect(errors).toEqual([]);
  }, 60_000);

  // A documented demonstration of the problem minHoldTime solves: without it, a replica whose timer
  // runs late finds the lock already released by a fast job and runs the same tick again. Printed,
  // not asserted (how many duplicates depends on the machine's timing); only what holds anyway is.
  it('without minHoldTime, the late replicas run most ticks again (demonstration)', async () => {
    const { runs, errors } = await observeReplicas(redis, 0, 'without-min-hold');
    const duplicated = runs.filter((count) => count > 1).length;
    console.log(`without minHoldTime: runs per tick ${JSON.stringify(runs)}; ${duplicated} of ${runs.length} ticks ran more than once`);
    expect(runs.every((count) => count >= 1)).toBe(true);
    expect(errors).toEqual([]);
  }, 60_000);
});

@Injectable()
class StackedJobs {
  readonly seen: Record<'above' | 'below', Array<LockRunContext | undefined>> = { above: [], below: [] };

  constructor(private readonly locks: LockService) {}

  @Cron('* * * * * *')
  @DistributedLock('stacked:above', { skipIfLocked: true })
  async above() {
    this.seen.above.push(this.locks.current());
  }

  @DistributedLock('stacked:below', { skipIfLocked: true })
  @Cron('* * * * * *')
  async below() {
    this.seen.below.push(this.locks.current());
  }
}

describe('@Cron stacked above and below @DistributedLock', () => {
  let redis: TestRedis;
  let app: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    app = await Test.createTestingModule({
      imports: [ScheduleModule.forRoot(), LockModule.forRoot({ redis: redis.url })],
      providers: [StackedJobs],
    }).compile();
    app.useLogger(false);
    await app.init();
  });

  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('both orders are scheduled and run under their lock', async () => {
    const jobs = app.get(StackedJobs);
    await waitUntil(() => jobs.seen.above.length > 0 && jobs.seen.below.length > 0, 10_000);
    expect(jobs.seen.above[0]).toMatchObject({ name: 'stacked:above' });
    expect(jobs.seen.below[0]).toMatchObject({ name: 'stacked:below' });
  });

  it('both orders skip while the lock is held elsewhere', async () => {
    const jobs = app.get(StackedJobs);
    const debug = jest.spyOn(app.get(LockEngine).logger, 'debug').mockImplementation(() => undefined);
    const holders = [app.get(LockService).getLock('stacked:above'), app.get(LockService).getLock('stacked:below')];
    for (const holder of holders) await holder.lock();
    try {
      const before = { above: jobs.seen.above.length, below: jobs.seen.below.length };
      const skipped = (name: string) => debug.mock.calls.some(([message]) => String(message).includes(`"${name}" is held elsewhere`));
      // A tick of each job came and skipped: neither body ran.
      await waitUntil(() => skipped('stacked:above') && skipped('stacked:below'), 10_000);
      expect(jobs.seen.above.length).toBe(before.above);
      expect(jobs.seen.below.length).toBe(before.below);
    } finally {
      for (const holder of holders) await holder.unlock();
      debug.mockRestore();
    }
  });
});
