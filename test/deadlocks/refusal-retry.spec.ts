import type { TestingModule } from '@nestjs/testing';
import { LockDeadlockError, LockService } from '../../lib';
import { waitForGraph } from '../../lib/deadlocks/wait-for-graph';
import type { WaitNode } from '../../lib/deadlocks/wait-node';
import { LockEngine } from '../../lib/engine/lock-engine';
import { createLockApp, sleep } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * Review (docs/deadlocks.md, promise (c)), code path: `Acquisition.deliver`'s late-grant branch
 * gives the grant back and then `retry()`s; `retry` checks a cancellation but not a refusal (nor
 * `ended`). A refusal that lands while that give-back is in flight ends the acquisition, and the
 * retry then sends one more attempt that joins the line, which nobody leaves. The refusal is
 * delivered here through the graph's own `refuse` callback at that moment (the window a cross-process
 * check's walk, finishing late, can hit); a leaseTime of 2 ms makes every grant "late"
 * (leaseDriftMs(2) = 2).
 */
describe('review: a refusal during the late-grant give-back', () => {
  let redis: TestRedis;
  let app: TestingModule;
  beforeAll(async () => {
    redis = await startRedis();
    app = await createLockApp({ redis: redis.url });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('sends no attempt after the refusal and leaves no line entry', async () => {
    const locks = app.get(LockService);
    const engine = app.get(LockEngine);
    const holder = locks.getLock('late-x');
    const other = locks.getLock('late-x');
    await holder.lock();
    const victim = locks.getLock('late-x') as any;
    const nodes = () => [...((waitForGraph as any).waitsByLock.get(engine)?.get(victim.lockKey) ?? [])] as WaitNode[];
    const originalUndo = victim.undoGrant.bind(victim);
    let undos = 0;
    victim.undoGrant = async (requestId: string) => {
      undos += 1;
      if (undos === 1) {
        // The refusal lands now; someone else takes the lock before the retry runs.
        for (const node of nodes()) node.refuse(new LockDeadlockError([{ lock: 'late-x', owner: 'x' }]));
        const done = await originalUndo(requestId);
        await other.lock();
        return done;
      }
      return originalUndo(requestId);
    };
    const attempt = victim.tryLock({ waitTime: 5_000, leaseTime: 2 });
    while (nodes().length === 0) await sleep(2);
    await holder.unlock(); // the victim is granted; its grant is "late" (2 ms lease)
    await expect(attempt).rejects.toBeInstanceOf(LockDeadlockError);
    await sleep(300);
    const raw = redis.client();
    const line = await raw.lrange(`${victim.lockKey}:line`, 0, -1);
    await other.unlock();
    expect({ undos, line }).toEqual({ undos: 1, line: [] });
  });
});
