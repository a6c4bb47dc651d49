/** One W6 worker process (bench/workloads/w6-semaphore.ts): argv redisUrl variant paramsJson. */
import { W6Params, W6Variant, w6Child } from './workloads/w6-semaphore';

const [redisUrl, variant, params] = process.argv.slice(2);
w6Child(redisUrl, variant as W6Variant, JSON.parse(params) as W6Params).then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
