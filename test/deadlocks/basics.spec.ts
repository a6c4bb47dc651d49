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

  /**
   * Two chains: one holds `a` and asks for `b`, the other (through `theirs`) holds `b` and asks for
   * `a` once both hold their first lock. Exactly one is refused, the other finishes.
   */
  async function crossed(theirs: LockService, a: string, b: string): Promise<void> {
    let inA = false;
    let inB = false;
    const first = locks.run(a, async () => {
      inA = true;
      await until(() => inB);
      return locks.run(b, async () => 'first', { waitTime: 20_000 });
    }, { waitTime: 20_000 });
    const second = theirs.run(b, async () => {
      inB = true;
      await until(() => inA);
      return theirs.run(a, async () => 'second', { waitTime: 20_000 });
    }, { waitTime: 20_000 });
    const results = await Promise.allSettled([first, second]);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused).toHaveLength(1);
    expect(refused[0].reason).toBeInstanceOf(LockDeadlockError);
    expect([...(refused[0].reason as LockDeadlockError).lockName].sort()).toEqual([a, b].sort());
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  }

  it('A->B / B->A in one process: one refused at once, the other finishes', () => crossed(locks, 'a', 'b'));

  it('A->B / B->A across two module instances of one process: refused at once too (one graph per process)', () => crossed(other.get(LockService), 'x', 'y'));

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
    await outer.catch(() => undefined);
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
