/**
 * `npm run demo` (add `-- --keep` to keep the apps running afterwards, the lock board open, with a
 * little load on them until Ctrl-C): three instances of the sample app against one Redis, a burst of concurrent
 * reservations for one product spread over them, once through the endpoint locked with
 * @DistributedLock('stock:#sku') and once through the same code without a lock. Prints what each
 * endpoint sold against the stock it had, and stops everything it started.
 */
import Redis from 'ioredis';
import { AppInstance, startInstances, stopInstances } from './demo/instances';
import { fireReservations, getStock, setStock } from './demo/load';
import { DemoRedis, NoRedisError, provideRedis } from './demo/redis';
import { EndpointSummary, formatJobReport, formatReport, summarize, summarizeJob } from './demo/report';
import { REPORT_RUNNERS_KEY, REPORT_RUNS_KEY } from './src/jobs/inventory-report.job';

const INSTANCES = 3;
const STOCK = 50;
const REQUESTS = 300;
/** The scheduled job is watched at least this long (it runs every second on every instance). */
const JOB_WATCH_MS = 6_000;

const ENDPOINTS = [
  { name: 'POST /products/:sku/reservations (locked)', path: 'reservations' },
  { name: 'POST /products/:sku/reservations-unlocked', path: 'reservations-unlocked' },
];

async function run(redis: DemoRedis, instances: AppInstance[]): Promise<void> {
  // Every instance has scheduled the job once it listens: the job's window starts now.
  const jobWatchFrom = Date.now();
  const urls = instances.map((instance) => instance.url);
  console.log(`Redis: ${redis.origin}`);
  console.log(`${INSTANCES} sample-app processes: ${urls.join(', ')}`);
  console.log(`Each endpoint: a product with stock ${STOCK}, ${REQUESTS} concurrent reservations of 1, round-robin over the instances\n`);

  const summaries: EndpointSummary[] = [];
  const skus: string[] = [];
  for (const endpoint of ENDPOINTS) {
    const sku = `demo-${endpoint.path}-${Date.now()}`;
    skus.push(sku);
    await setStock(urls[0], sku, STOCK);
    const answers = await fireReservations(urls, `/products/${sku}/${endpoint.path}`, REQUESTS);
    summaries.push(summarize(endpoint.name, STOCK, answers, await getStock(urls[0], sku)));
  }
  console.log(formatReport(summaries));

  const [locked, unlocked] = summaries;
  console.log('');
  console.log(
    locked.oversold === 0 && locked.reserved === STOCK
      ? `Locked: exactly ${STOCK} reserved, never more, with the 3 processes taking turns per product.`
      : `Locked: ${locked.reserved} reserved for a stock of ${STOCK} (see the table).`,
  );
  console.log(
    unlocked.oversold > 0
      ? `Unlocked: ${unlocked.reserved} reserved for a stock of ${STOCK}: ${unlocked.oversold} sold that did not exist (lost updates).`
      : `Unlocked: no oversell this time; the race is real but depends on timing.`,
  );
  console.log('"lock wait" is the time between a request reaching the controller and its reservation starting.');

  // The job ran all along on the three instances; watch it for a few ticks at least.
  const watched = Date.now() - jobWatchFrom;
  if (watched < JOB_WATCH_MS) await new Promise((resolve) => setTimeout(resolve, JOB_WATCH_MS - watched));
  const jobWatchTo = Date.now();
  const client = new Redis(redis.url);
  try {
    const [runsByTick, runners] = await Promise.all([client.hgetall(REPORT_RUNS_KEY), client.hgetall(REPORT_RUNNERS_KEY)]);
    const ports = instances.map((instance) => new URL(instance.url).port);
    const job = summarizeJob(runsByTick, runners, jobWatchFrom, jobWatchTo, ports);
    console.log('');
    console.log(formatJobReport(job, INSTANCES));
    console.log(
      job.duplicated === 0 && job.missed === 0
        ? `  Once per tick: the other instances skipped it (logged at debug level only).`
        : `  Not once per tick this time (see above): a timer later than minHoldTime, or an instance busy for a whole second.`,
    );
    await client.del(REPORT_RUNS_KEY, REPORT_RUNNERS_KEY, ...skus.map((sku) => `sample:stock:${sku}`));
  } finally {
    client.disconnect();
  }
}

/**
 * `--keep`: the instances stay up with the lock board at /lock-board on each, and a small stream of
 * reservations keeps some locks held and waited for, until Ctrl-C.
 */
async function keepRunning(instances: AppInstance[]): Promise<void> {
  const urls = instances.map((instance) => instance.url);
  console.log('');
  console.log(`The apps keep running. The lock board: ${urls[0]}/lock-board (also on ${urls.slice(1).map((url) => `${url}/lock-board`).join(', ')})`);
  if (process.env.ADMIN_TOKEN) console.log(`ADMIN_TOKEN is set: sign in at ${urls[0]}/admin/login first (a session cookie; curl sends the bearer token).`);
  console.log('A few reservations a second keep locks busy; Ctrl-C stops everything.');
  const sku = 'board-demo';
  for (;;) {
    await setStock(urls[0], sku, 1_000);
    await fireReservations(urls, `/products/${sku}/reservations`, 20).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

async function main(): Promise<number> {
  let redis: DemoRedis | undefined;
  let instances: AppInstance[] = [];
  let stopping: Promise<void> | undefined;
  const cleanup = () => (stopping ??= stopInstances(instances).then(() => redis?.stop()));
  process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)));
  try {
    redis = await provideRedis();
    instances = await startInstances(INSTANCES, redis.url);
    await run(redis, instances);
    if (process.argv.includes('--keep')) await keepRunning(instances);
    return 0;
  } catch (error) {
    console.error(error instanceof NoRedisError ? error.message : error);
    return 1;
  } finally {
    await cleanup();
  }
}

main().then((code) => process.exit(code));
