import { Test, TestingModule } from '@nestjs/testing';
import { LockUnavailableError } from '../../../lib';
import { LockTestingControls, LockTestingModule } from '../../../lib/testing';
import { APP_REDIS } from '../redis/app-redis.provider';
import { InventoryReportJob, REPORT_RUNS_KEY } from './inventory-report.job';

/** The app's Redis as far as the job uses it: a MULTI whose HINCRBYs are counted per key. */
function countingRedis() {
  const counts = new Map<string, number>();
  const multi = () => {
    const chain = {
      hincrby: (key: string) => (counts.set(key, (counts.get(key) ?? 0) + 1), chain),
      expire: () => chain,
      exec: async () => [],
    };
    return chain;
  };
  return { counts, multi };
}

/** Unit tests: the job's lock comes from the testing kit (no Redis); the scheduler is not started. */
describe('InventoryReportJob (testing kit)', () => {
  let moduleRef: TestingModule;
  let job: InventoryReportJob;
  let controls: LockTestingControls;
  let redis: ReturnType<typeof countingRedis>;
  const runs = () => redis.counts.get(REPORT_RUNS_KEY) ?? 0;

  beforeEach(async () => {
    jest.useFakeTimers();
    redis = countingRedis();
    moduleRef = await Test.createTestingModule({
      imports: [LockTestingModule.forRoot()],
      providers: [InventoryReportJob, { provide: APP_REDIS, useValue: redis }],
    }).compile();
    await moduleRef.init();
    job = moduleRef.get(InventoryReportJob);
    controls = moduleRef.get(LockTestingControls);
  });
  afterEach(async () => {
    await moduleRef.close();
    jest.useRealTimers();
  });

  it('runs when no other instance holds the job, and keeps it for minHoldTime: a late tick of another replica skips', async () => {
    await job.report();
    expect(runs()).toBe(1);
    // Another call chain (as another replica's timer firing late) finds it still held and skips.
    await expect(job.report()).resolves.toBeUndefined();
    expect(runs()).toBe(1);
    expect(controls.acquisitions.map((a) => a.outcome)).toEqual(['acquired', 'skipped']);
    // Still held just before 500 ms after the run began; free from then on.
    await jest.advanceTimersByTimeAsync(490);
    await expect(job.report()).resolves.toBeUndefined();
    expect(runs()).toBe(1);
    await jest.advanceTimersByTimeAsync(10);
    await job.report();
    expect(runs()).toBe(2);
  });

  it('skips quietly while another instance runs it', async () => {
    const other = await controls.holdElsewhere('jobs:inventory-report');
    await expect(job.report()).resolves.toBeUndefined();
    expect(runs()).toBe(0);
    await other.release();
    await job.report();
    expect(runs()).toBe(1);
  });

  it('does not run, and says why, while Redis is down (never taken for a skip)', async () => {
    controls.setUnavailable(true);
    await expect(job.report()).rejects.toBeInstanceOf(LockUnavailableError);
    expect(runs()).toBe(0);
  });
});
