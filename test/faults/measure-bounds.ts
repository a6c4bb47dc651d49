/**
 * Measures, per fault, how long the caller waited and what it saw, over 5 runs (median and worst):
 * the figures of the faults issue's closing note. Not a test (tests assert no wall-clock times):
 * `npm run faults:measure`. Module defaults except `watchdogTimeout: 3000` (so leases run out in
 * seconds, not 30 s); `commandTimeout` is the default 3000 ms.
 */
import 'reflect-metadata';
import { Test, TestingModule } from '@nestjs/testing';
import { LockModule, LockModuleOptions, LockService } from '../../lib';
import { LockEngine } from '../../lib/engine/lock-engine';
import { spawnFixture } from '../support/child-process';
import { ReplyDroppingProxy } from '../support/reply-dropping-proxy';
import { RestartableRedis } from '../support/restartable-redis';
import { waitFor } from '../support/wait-for';

const RUNS = 5;
const WATCHDOG = 3_000;
/** Only against a hang: every wait below ends in seconds, and a stuck one fails naming what it waited for. */
const DEADLINE_MS = 30_000;

async function app(options: LockModuleOptions): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({ imports: [LockModule.forRoot({ watchdogTimeout: WATCHDOG, ...options })] }).compile();
  moduleRef.useLogger(false);
  await moduleRef.init();
  return moduleRef;
}

const outcomeOf = (error: unknown): string => (error === undefined ? 'resolved' : (error as Error).constructor.name);

async function timed(work: () => Promise<unknown>): Promise<{ ms: number; saw: string }> {
  const started = Date.now();
  try {
    const value = await work();
    return { ms: Date.now() - started, saw: `resolved ${String(value)}` };
  } catch (error) {
    return { ms: Date.now() - started, saw: outcomeOf(error) };
  }
}

interface Row {
  fault: string;
  samples: number[];
  saw: Set<string>;
}
const rows: Row[] = [];

async function measure(fault: string, once: (run: number) => Promise<{ ms: number; saw: string }>): Promise<void> {
  const row: Row = { fault, samples: [], saw: new Set() };
  for (let run = 0; run < RUNS; run++) {
    const { ms, saw } = await once(run);
    row.samples.push(ms);
    row.saw.add(saw);
  }
  rows.push(row);
  const sorted = [...row.samples].sort((a, b) => a - b);
  process.stderr.write(`${fault}: median ${sorted[2]} ms, worst ${sorted[4]} ms; ${[...row.saw].join(', ')}\n`);
}

async function main(): Promise<void> {
  const redis = await RestartableRedis.start();
  const locks = await app({ redis: redis.url });
  const service = locks.get(LockService);
  let n = 0;
  const fresh = () => `measure-${++n}`;

  await measure('frozen during acquisition: run(waitTime 500)', async () => {
    redis.pause();
    try {
      return await timed(() => service.run(fresh(), async () => 'ran', { waitTime: 500 }));
    } finally {
      redis.resume();
    }
  });

  await measure('frozen: tryLock() (one attempt)', async () => {
    redis.pause();
    try {
      return await timed(() => service.getLock(fresh()).tryLock());
    } finally {
      redis.resume();
    }
  });

  await measure('frozen during release: unlock()', async () => {
    const lock = service.getLock(fresh());
    await lock.lock();
    redis.pause();
    try {
      return await timed(() => lock.unlock());
    } finally {
      redis.resume();
    }
  });

  await measure('frozen during a hold: freeze -> signal aborted (lease 3000 ms)', async () => {
    let resolveLost!: (reason: unknown) => void;
    const lost = new Promise((resolve) => (resolveLost = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let frozenAt = 0;
    const running = service.run(fresh(), async ({ signal }) => {
      signal.addEventListener('abort', () => resolveLost(signal.reason));
      redis.pause();
      frozenAt = Date.now();
      await gate;
    });
    const reason = await lost;
    const ms = Date.now() - frozenAt;
    redis.resume();
    release();
    await running.catch(() => undefined);
    return { ms, saw: `signal: ${outcomeOf(reason)}` };
  });

  await measure('Redis down (killed): run(waitTime 500)', async () => {
    await redis.kill();
    try {
      return await timed(() => service.run(fresh(), async () => 'ran', { waitTime: 500 }));
    } finally {
      await redis.restart();
    }
  });

  await measure('restarted empty: restart -> waiting tryLock(waitTime 20000) acquires', async () => {
    const name = fresh();
    const holder = await app({ redis: redis.url });
    await holder.get(LockService).getLock(name).lock();
    const waiting = service.getLock(name).tryLock({ waitTime: 20_000 });
    const { subscriber } = locks.get(LockEngine);
    await waitFor(() => subscriber.waiterCount() > 0, { what: 'the tryLock to wait on the subscriber', timeoutMs: DEADLINE_MS, stepMs: 5 });
    await redis.restart();
    const restartedAt = Date.now();
    const acquired = await waiting;
    const ms = Date.now() - restartedAt;
    await service.getLock(name).unlock().catch(() => undefined);
    await holder.close();
    return { ms, saw: `acquired ${acquired}` };
  });

  await measure('restarted empty: restart -> holder signal aborted', async () => {
    let resolveLost!: (reason: unknown) => void;
    const lost = new Promise((resolve) => (resolveLost = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let held!: () => void;
    const isHeld = new Promise<void>((resolve) => (held = resolve));
    const running = service.run(fresh(), async ({ signal }) => {
      signal.addEventListener('abort', () => resolveLost(signal.reason));
      held();
      await gate;
    });
    await isHeld;
    await redis.restart();
    const restartedAt = Date.now();
    const reason = await lost;
    const ms = Date.now() - restartedAt;
    release();
    await running.catch(() => undefined);
    return { ms, saw: `signal: ${outcomeOf(reason)}` };
  });

  const proxy = await ReplyDroppingProxy.start(redis.port);
  const proxied = await app({ redis: proxy.url });
  const raw = redis.client();
  await measure('replies dropped (proxy): tryLock(waitTime 500)', async () => {
    const name = fresh();
    proxy.dropReplies = true;
    const outcome = await timed(() => proxied.get(LockService).getLock(name).tryLock({ waitTime: 500 }));
    const gaveUpAt = Date.now();
    await waitFor(async () => (await raw.exists(`lock:{${name}}`)) === 0, {
      what: `the phantom hold of ${name} to be undone`,
      timeoutMs: DEADLINE_MS,
      stepMs: 5,
    });
    const phantomGoneAfter = Date.now() - gaveUpAt;
    proxy.dropReplies = false;
    proxy.resetConnections();
    return { ms: outcome.ms, saw: `${outcome.saw}; phantom hold undone ${phantomGoneAfter < 100 ? '<100' : phantomGoneAfter} ms after` };
  });
  await proxied.close();
  await proxy.close();

  await measure('holder process SIGSTOPped past its lease: resume -> signal aborted', async () => {
    const name = fresh();
    const child = spawnFixture('paused-holder', [redis.url, name, String(WATCHDOG), 'sigstop']);
    const out: string[] = [];
    child.stdout?.on('data', (chunk: Buffer) => out.push(...String(chunk).split('\n')));
    const line = async (prefix: string): Promise<string> => {
      await waitFor(() => out.some((l) => l.startsWith(prefix)), { what: `the holder to print "${prefix}..."`, timeoutMs: DEADLINE_MS });
      return out.find((l) => l.startsWith(prefix))!;
    };
    await line('held ');
    child.kill('SIGSTOP');
    await new Promise((resolve) => setTimeout(resolve, WATCHDOG + 500));
    child.kill('SIGCONT');
    const ms = Number((await line('lost ')).split(' ')[1]);
    const write = await line('write ');
    await line('done');
    return { ms, saw: `LockLostError; fenced ${write}` };
  });

  await locks.close();
  await redis.dispose();
  process.stdout.write('\n| fault | median ms | worst ms | what the caller saw |\n| :-- | --: | --: | :-- |\n');
  for (const row of rows) {
    const sorted = [...row.samples].sort((a, b) => a - b);
    process.stdout.write(`| ${row.fault} | ${sorted[Math.floor(RUNS / 2)]} | ${sorted[RUNS - 1]} | ${[...row.saw].join(', ')} |\n`);
  }
  process.exit(0);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
