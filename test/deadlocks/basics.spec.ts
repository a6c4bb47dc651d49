import type { TestingModule } from '@nestjs/testing';
import { LockDeadlockError, LockService, ReadWriteLockService, SemaphoreService } from '../../lib';
import { ENGINES, type EngineHandle } from '../support/lock-contract';

/** Resolves once `flag()` is true (polled): for ordering parties, never a sleep that hopes. */
async function until(flag: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await flag())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

// One suite, run on Redis and on the testing kit (the kit finds the same cycles).
for (const engine of ENGINES()) describe(`deadlocks: the basic cycles (docs/deadlocks.md), on ${engine.name}`, () => {
  let started: EngineHandle;
  let app: TestingModule;
  let other: TestingModule;
  let locks: LockService;
  beforeAll(async () => {
    started = await engine.start();
    app = await started.createApp({ redis: started.url, deadlockCheckAfter: 200 });
    other = await started.createApp({ redis: started.url, deadlockCheckAfter: 200 });
    locks = app.get(LockService);
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await started?.stop();
  });

  it('A->B / B->A in one process: one refused at once, the other finishes', async () => {
    let inA = false;
    let inB = false;
    const first = locks.run('a', async () => {
      inA = true;
      await until(() => inB);
      return locks.run('b', async () => 'first', { waitTime: 20_000 });
    }, { waitTime: 20_000 });
    const second = locks.run('b', async () => {
      inB = true;
      await until(() => inA);
      await new Promise((r) => setTimeout(r, 50));
      return locks.run('a', async () => 'second', { waitTime: 20_000 });
    }, { waitTime: 20_000 });
    const started = Date.now();
    const results = await Promise.allSettled([first, second]);
    const refused = results.filter((r) => r.status === 'rejected');
    expect(refused).toHaveLength(1);
    const error = (refused[0] as PromiseRejectedResult).reason;
    expect(error).toBeInstanceOf(LockDeadlockError);
    console.log(error.message, JSON.stringify(error.cycle), Date.now() - started);
    expect(results.find((r) => r.status === 'fulfilled')).toBeTruthy();
  });

  it('A->B / B->A across two module instances: refused after deadlockCheckAfter', async () => {
    const theirs = other.get(LockService);
    let inA = false;
    let inB = false;
    const first = locks.run('x', async () => {
      inA = true;
      await until(() => inB);
      return locks.run('y', async () => 'first', { waitTime: 20_000 });
    }, { waitTime: 20_000 });
    const second = theirs.run('y', async () => {
      inB = true;
      await until(() => inA);
      await new Promise((r) => setTimeout(r, 50));
      return theirs.run('x', async () => 'second', { waitTime: 20_000 });
    }, { waitTime: 20_000 });
    const started = Date.now();
    const results = await Promise.allSettled([first, second]);
    const refused = results.filter((r) => r.status === 'rejected');
    expect(refused).toHaveLength(1);
    const error = (refused[0] as PromiseRejectedResult).reason;
    console.log(error.message, JSON.stringify(error.cycle), Date.now() - started);
    expect(error).toBeInstanceOf(LockDeadlockError);
  });

  it('nested read behind a writer in line is refused', async () => {
    const rw = app.get(ReadWriteLockService);
    const field = rw.getReadWriteLock('doc');
    const writerLock = rw.getReadWriteLock('doc');
    let reading = false;
    const outer = rw.runRead('doc', async () => {
      reading = true;
      await until(async () => ((await rw.inspect('doc')).waiters?.length ?? 0) > 0);
      await field.readLock().tryLock({ waitTime: 20_000 });
    });
    await until(() => reading);
    const writer = writerLock.writeLock().tryLock({ waitTime: 20_000 });
    await expect(outer).rejects.toBeInstanceOf(LockDeadlockError);
    await outer.catch((e) => console.log(e.message));
    expect(await writer).toBe(true);
    await writerLock.writeLock().unlock();
  });

  it('nested semaphore behind a bigger request is refused', async () => {
    const sems = app.get(SemaphoreService);
    const sem = sems.getSemaphore('exports', { permits: 2 });
    let holding = false;
    const outer = sems.run('exports', async () => {
      holding = true;
      await until(async () => (await sem.inspect()).waiters.length > 0);
      const p = await sem.acquire({ take: 1, waitTime: 20_000 });
      await p.release();
    }, { permits: 2, waitTime: 20_000 });
    await until(() => holding);
    const refused = expect(outer).rejects.toBeInstanceOf(LockDeadlockError);
    const big = await sem.acquire({ take: 2, waitTime: 20_000 });
    await big.release();
    await refused;
  });
});
