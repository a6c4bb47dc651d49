/**
 * The randomized hold model's property (test/hold-model/randomized.spec.ts) as a describe block for
 * one layout: one real Redis for the whole run, a warm child process, fast-check over the schedules
 * with a replayable seed and path, a time limit, and the replay line on failure.
 */
import fc from 'fast-check';
import type Redis from 'ioredis';
import { LineWaitersChild } from '../line-waiters';
import { RestartableRedis } from '../restartable-redis';
import type { Layout } from './kinds';
import { runSchedule } from './run-schedule';
import { ownerModelScheduleArb } from './owner-model-schedule';
import { redissonScheduleArb, WITHOUT, type Schedule } from './schedule';

/**
 * FC_KEEP_GOING=1 (exploration): a failing schedule does not end the run; each is listed at the end with
 * its path (replay: FC_SEED=<seed> FC_PATH=<path>) and how many overlaps it found.
 */
const KEEP_GOING = process.env.FC_KEEP_GOING === '1';

/** A bound on the whole property run (a 2-core CI machine); FC_TIME_LIMIT_MS for longer explorations. */
const TIME_LIMIT_MS = Number(process.env.FC_TIME_LIMIT_MS ?? 150_000);

export interface RandomizedRun {
  layout: Layout;
  /** The spec file, for the replay line. */
  spec: string;
  /** Schedules per run unless the environment variable `runsVariable` says (CI's budget). */
  defaultRuns: number;
  /** FC_RUNS for the native run; its own for another layout (CI's second pass sets FC_RUNS=20 for the native run only). */
  runsVariable: string;
}

export function describeRandomizedHoldModel({ layout, spec, defaultRuns, runsVariable }: RandomizedRun): void {
  describe(`hold model: randomized schedules across two instances${layout === 'native' ? '' : ` (layout '${layout}')`}`, () => {
    let redis: RestartableRedis;
    let raw: Redis;
    let runSeq = 0;
    /** A child started ahead (loading the library takes seconds), taken by the next schedule with a child. */
    let warmChild: LineWaitersChild | undefined;

    beforeAll(async () => {
      redis = await RestartableRedis.start();
      raw = redis.client();
      if (!WITHOUT.has('child')) warmChild = LineWaitersChild.spawn();
    });
    afterAll(async () => {
      warmChild?.kill();
      await warmChild?.exited;
      redis?.resume();
      await redis?.dispose();
    });

    const env = {
      layout,
      get redis() {
        return redis;
      },
      get raw() {
        return raw;
      },
      nextPrefix: () => `r${++runSeq}-`,
      takeChild: () => {
        const child = warmChild ?? LineWaitersChild.spawn();
        warmChild = LineWaitersChild.spawn();
        return child;
      },
    };

    it(
      'no second holder while a body runs with a live signal, and nothing held once everything settled',
      async () => {
        const path = process.env.FC_PATH;
        // With KEEP_GOING: the n-th schedule of a seed is path n (unshrunk).
        let nth = Number(path ?? 0);
        const found: string[] = [];
        const property = (schedule: Schedule) => {
          const at = nth++;
          return runSchedule(env, schedule).catch((error: unknown) => {
            if (!KEEP_GOING) throw error;
            const lines = String(error instanceof Error ? error.message : error).split('\n');
            const count = (kind: string) => lines.filter((line) => line.startsWith(kind)).length;
            const counts = ['overlap', 'not granted', 'unexpected', 'still held', 'did not settle', 'key without TTL'].map((k) => `${count(k)} ${k}`);
            found.push(`path ${at}: ${counts.join(', ')}; ${lines[0]}`);
          });
        };
        const check = () =>
          fc.check(
            fc.asyncProperty(layout === 'redisson' ? redissonScheduleArb : ownerModelScheduleArb, property),
            {
              seed: Number(process.env.FC_SEED ?? 23_2026),
              path,
              numRuns: Number(process.env[runsVariable] ?? (path ? 1 : defaultRuns)),
              endOnFailure: !process.env.FC_SHRINK,
              // A bound on the whole run (a 2-core CI machine): the cases run so far still count.
              interruptAfterTimeLimit: TIME_LIMIT_MS,
            },
          );
        // The schedule replays exactly; its timing does not, so a replay may ask for a few tries.
        let details = await check();
        for (let tries = Number(process.env.FC_REPEAT ?? 1); !details.failed && tries > 1; tries--) details = await check();
        // How much was explored (a run cut short by the time limit still passed what it ran).
        process.stdout.write(`randomized hold model${layout === 'native' ? '' : ` (${layout})`}: seed ${details.seed}, ${details.numRuns} schedules${details.interrupted ? ' (time limit reached)' : ''}\n`);
        if (found.length > 0) throw new Error(`seed ${details.seed}: ${found.length} failing schedule(s) of ${details.numRuns}\n${found.join('\n')}`);
        if (details.failed) {
          const replay = `FC_SEED=${details.seed} FC_PATH=${details.counterexamplePath} npx jest ${spec}`;
          const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
          throw new Error(`${cause}\n\n${fc.defaultReportMessage(details)}\n\nReplay: ${replay}`);
        }
      },
      TIME_LIMIT_MS + 90_000,
    );
  });
}
