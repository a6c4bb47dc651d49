import { AppInstance, startInstances, stopInstances } from '../sample-app/demo/instances';
import { fireReservations, getStock, setStock } from '../sample-app/demo/load';
import { formatJobReport, summarize, summarizeJob } from '../sample-app/demo/report';
import { REPORT_RUNNERS_KEY, REPORT_RUNS_KEY } from '../sample-app/src/jobs/inventory-report.job';
import { waitUntil } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';

/**
 * End to end: the sample app as 2 separate processes against one Redis. The locked endpoint never
 * sells more than the stock, and a payment sent to both at once is charged once.
 */
describe('sample app, 2 processes, one Redis', () => {
  let redis: TestRedis;
  let instances: AppInstance[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    instances = await startInstances(2, redis.url);
  }, 120_000);
  afterAll(async () => {
    await stopInstances(instances);
    await redis?.stop();
  });

  it('the locked reservation endpoint never oversells', async () => {
    const urls = instances.map((instance) => instance.url);
    await setStock(urls[0], 'e2e-1', 20);
    const answers = await fireReservations(urls, '/products/e2e-1/reservations', 100);
    const summary = summarize('locked', 20, answers, await getStock(urls[1], 'e2e-1'));
    expect(summary).toMatchObject({ requests: 100, reserved: 20, outOfStock: 80, locked: 0, failed: 0, oversold: 0, stockLeft: 0 });
  }, 60_000);

  it('a payment sent to both processes at once is charged once', async () => {
    const pay = (url: string) =>
      fetch(`${url}/orders/o-1/payment`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ amount: 30 }),
      }).then((response) => response.json() as Promise<{ status: string; amount: number }>);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => pay(instances[i % 2].url)));
    expect(results.filter((result) => result.status === 'paid')).toHaveLength(1);
    expect(results.filter((result) => result.status === 'already-paid')).toHaveLength(9);
    expect(results.every((result) => result.amount === 30)).toBe(true);
  }, 60_000);

  it('answers 404 for an unknown product, through the lock, and leaves no lock behind', async () => {
    const response = await fetch(`${instances[0].url}/products/nope/reservations`, { method: 'POST' });
    expect(response.status).toBe(404);
    const raw = redis.client();
    expect(await raw.exists('lock:{stock:nope}')).toBe(0);
  });

  it('the admin ?match= endpoint answers 400 for a pattern list() refuses, and lists with a usable one', async () => {
    const list = (query: string) => fetch(`${instances[0].url}/admin/locks?${query}`);
    for (const query of ['match=%5Bz-a%5D', `match=${encodeURIComponent('*?*?*?*?*?*?*?!')}`, 'match=a&match=b', 'match=%5Babc']) {
      const response = await list(query);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { message: string }).message).toMatch(/refused|one glob string/);
    }
    const ok = await list(`match=${encodeURIComponent('stock:*')}`);
    expect(ok.status).toBe(200);
    expect(Array.isArray(await ok.json())).toBe(true);
  });

  it('the @Cron job both processes schedule every second ran once per tick', async () => {
    const raw = redis.client();
    // Both processes have scheduled it since they started; the ticks from now on are watched (the
    // earlier ones fell while a process was still starting or busy with the tests above).
    const firstTick = Math.ceil(Date.now() / 1000);
    const watched = async () =>
      Object.entries(await raw.hgetall(REPORT_RUNS_KEY))
        .filter(([tick]) => Number(tick) >= firstTick)
        .map(([, runs]) => Number(runs));
    await waitUntil(async () => (await watched()).length >= 3, 15_000);
    const runsPerTick = await watched();
    expect(runsPerTick).toEqual(runsPerTick.map(() => 1));

    // The demo's report over those ticks: who ran them adds up to the ticks (not runs from before or after).
    const to = (firstTick + runsPerTick.length) * 1000;
    const ports = instances.map((instance) => new URL(instance.url).port);
    const job = summarizeJob(await raw.hgetall(REPORT_RUNS_KEY), await raw.hgetall(REPORT_RUNNERS_KEY), firstTick * 1000, to, ports);
    expect(job).toMatchObject({ ticks: runsPerTick.length, once: runsPerTick.length, duplicated: 0, missed: 0 });
    expect(Object.keys(job.runners).sort()).toEqual([...ports].sort());
    expect(Object.values(job.runners).reduce((sum, runs) => sum + runs, 0)).toBe(job.ticks);
    expect(formatJobReport(job, 2)).toContain(`(${job.ticks} runs for ${job.ticks} ticks: per tick, the instance whose timer fired first ran it and the others skipped)`);
  }, 30_000);
});
