/**
 * `npm run demo`: three instances of the sample app against one Redis, a burst of concurrent
 * reservations for one product spread over them, once through the endpoint locked with
 * @DistributedLock('stock:#sku') and once through the same code without a lock. Prints what each
 * endpoint sold against the stock it had, and stops everything it started.
 */
import Redis from 'ioredis';
import { AppInstance, startInstances, stopInstances } from './demo/instances';
import { fireReservations, getStock, setStock } from './demo/load';
import { DemoRedis, NoRedisError, provideRedis } from './demo/redis';
import { EndpointSummary, formatReport, summarize } from './demo/report';

const INSTANCES = 3;
const STOCK = 50;
const REQUESTS = 300;

const ENDPOINTS = [
  { name: 'POST /products/:sku/reservations (locked)', path: 'reservations' },
  { name: 'POST /products/:sku/reservations-unlocked', path: 'reservations-unlocked' },
];

async function run(redis: DemoRedis, instances: AppInstance[]): Promise<void> {
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

  const cleaner = new Redis(redis.url);
  await cleaner.del(...skus.map((sku) => `sample:stock:${sku}`)).finally(() => cleaner.disconnect());
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
    return 0;
  } catch (error) {
    console.error(error instanceof NoRedisError ? error.message : error);
    return 1;
  } finally {
    await cleanup();
  }
}

main().then((code) => process.exit(code));
