import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockService, ReadWriteLockService, SemaphoreService } from '../lib';
import { createLockApp, releasesSettled } from './support/lock-app';
import { startRedis, type TestRedis } from './support/redis-server';

/** Every command the server ran since the last `CONFIG RESETSTAT`, by name (scripts' inner commands included). */
async function commandsRun(admin: Redis): Promise<Record<string, number>> {
  const info = await admin.info('commandstats');
  const calls: Record<string, number> = {};
  for (const [, name, count] of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) {
    if (!/^(config|info)\b/.test(name)) calls[name] = Number(count);
  }
  return calls;
}

/** The read release is not lean yet (docs/benchmarks.md#cost-per-operation says why): the acquire 7, the release 14. */
const LEAN_READ_COMMANDS = 21;

const total = (calls: Record<string, number>): number => Object.values(calls).reduce((sum, n) => sum + n, 0);

/**
 * What an uncontended locked call costs Redis (docs/architecture.md#lean-path): the work is counted
 * in commands, which do not depend on the machine's speed. The budget is the one the scripts were
 * cut to; a change that adds a command to the path everyone takes fails here first.
 */
describe('the lean path: what an uncontended locked call makes Redis run', () => {
  let redis: TestRedis;
  let app: TestingModule;
  let admin: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    admin = redis.client();
    app = await createLockApp({ redis: redis.url });
    // Scripts loaded, connections up: the counted calls are the locks' own.
    await app.get(LockService).run('warm-up', async () => undefined);
    await app.get(FairLockService).run('warm-up', async () => undefined);
    await releasesSettled(app);
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  async function countedRun(run: () => Promise<unknown>): Promise<Record<string, number>> {
    await admin.config('RESETSTAT');
    await run();
    await releasesSettled(app);
    return commandsRun(admin);
  }

  it.each([
    ['LockService.run', (name: string) => app.get(LockService).run(name, async () => undefined)],
    ['FairLockService.run', (name: string) => app.get(FairLockService).run(name, async () => undefined)],
  ])('%s: two scripts, 10 commands, no PUBLISH and no record read', async (_kind, run) => {
    const calls = await countedRun(() => run(`lean-${_kind}`));
    expect(calls.evalsha).toBe(2);
    expect(calls.publish ?? 0).toBe(0);
    expect(calls.get ?? 0).toBe(0);
    expect(calls.exists).toBe(1); // the acquire's one look at the lock and its line; the release does not look
    expect(total(calls)).toBe(10);
  });

  it('SemaphoreService.run: two scripts, 16 commands, no scan for expired holders or waiters while nobody waits', async () => {
    const semaphores = app.get(SemaphoreService);
    await semaphores.run('lean-permits-warm-up', async () => undefined, { permits: 3 });
    await releasesSettled(app);
    const calls = await countedRun(() => semaphores.run('lean-permits', async () => undefined, { permits: 3 }));
    expect(calls.evalsha).toBe(2);
    expect(calls.zrangebyscore ?? 0).toBe(0);
    expect(calls.lindex ?? 0).toBe(0);
    expect(calls.get ?? 0).toBe(0);
    expect(total(calls)).toBe(16);
  });

  it('ReadWriteLockService.runRead: the first read hold of a free lock takes no scan (its release still goes the whole way)', async () => {
    const readWrite = app.get(ReadWriteLockService);
    await readWrite.runRead('lean-read-warm-up', async () => undefined);
    await releasesSettled(app);
    const calls = await countedRun(() => readWrite.runRead('lean-read', async () => undefined));
    expect(calls.evalsha).toBe(2);
    expect(total(calls)).toBe(LEAN_READ_COMMANDS);
  });

  it('a release of a re-entered hold reads its record (it may be a resend), and the last one does not', async () => {
    const locks = app.get(LockService);
    const lock = locks.getLock('lean-reentry');
    await lock.lock();
    await lock.lock();
    await admin.config('RESETSTAT');
    await lock.unlock();
    expect((await commandsRun(admin)).get).toBe(1);
    await admin.config('RESETSTAT');
    await lock.unlock();
    // The episode had a release that left a hold: its last release reads the record too.
    expect((await commandsRun(admin)).get).toBe(1);
    const once = locks.getLock('lean-once');
    await once.lock();
    await admin.config('RESETSTAT');
    await once.unlock();
    expect((await commandsRun(admin)).get ?? 0).toBe(0);
  });

  it('a release behind which a waiter stood looks for the line and hands the lock over', async () => {
    const locks = app.get(LockService);
    const other = await createLockApp({ redis: redis.url });
    try {
      const holder = locks.getLock('lean-line');
      await holder.lock();
      const waiting = other.get(LockService).getLock('lean-line').tryLock({ waitTime: 10_000 });
      await waitForLine(admin, 'lock:{lean-line}:line');
      await admin.config('RESETSTAT');
      await holder.unlock();
      const calls = await commandsRun(admin);
      expect(calls.exists).toBeGreaterThanOrEqual(1);
      expect(calls.publish).toBeGreaterThanOrEqual(1); // the grant message
      // The holder's lease is 30 s and a plain waiter sleeps until it: in time only by the hand-off.
      expect(await waiting).toBe(true);
    } finally {
      await other.close();
    }
  });
});

async function waitForLine(admin: Redis, lineKey: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await admin.llen(lineKey)) === 0) {
    if (Date.now() > deadline) throw new Error(`nobody joined ${lineKey}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
