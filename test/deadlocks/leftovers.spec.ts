import type { TestingModule } from '@nestjs/testing';
import { FairLockService, LockDeadlockError, LockService } from '../../lib';
import { waitForGraph } from '../../lib/deadlocks/wait-for-graph';
import { LockEngine } from '../../lib/engine/lock-engine';
import { createLockApp, releasesSettled, sleep } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * Review (docs/deadlocks.md, promise (c)): a refused wait leaves no hold, no place in line, no
 * subscription and no wait-for record behind; the process-wide graph is emptied.
 */
describe('review: what a refused wait leaves behind', () => {
  const CHECK_AFTER_MS = 200;
  let redis: TestRedis;
  let one: TestingModule;
  let two: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    one = await createLockApp({ redis: redis.url, deadlockCheckAfter: CHECK_AFTER_MS });
    two = await createLockApp({ redis: redis.url, deadlockCheckAfter: CHECK_AFTER_MS });
  });
  afterAll(async () => {
    await one?.close();
    await two?.close();
    await redis?.stop();
  });

  async function leftovers(): Promise<string[]> {
    await releasesSettled(one);
    await releasesSettled(two);
    await sleep(100);
    return (await redis.client().keys('*')).filter((k) => !k.endsWith(':fence') && !k.includes(':rq:') && !k.startsWith('lock.instance:') && k !== 'lock.instances').sort();
  }

  const graphSize = (): number => {
    const g = waitForGraph as unknown as { waitsByHold: Map<unknown, unknown>; waitsByLock: Map<unknown, unknown> };
    return g.waitsByHold.size + g.waitsByLock.size;
  };

  for (const crossProcess of [false, true]) {
    it(`fair locks, ${crossProcess ? 'across two module instances' : 'in one process'}: nothing left once the survivor finished`, async () => {
      const fair1 = one.get(FairLockService);
      const fair2 = crossProcess ? two.get(FairLockService) : fair1;
      let inA = false;
      let inB = false;
      const p1 = fair1.run(`left-a-${crossProcess}`, async () => {
        inA = true;
        while (!inB) await sleep(5);
        return fair1.run(`left-b-${crossProcess}`, async () => 'first', { waitTime: 10_000 });
      }, { waitTime: 10_000 });
      const p2 = fair2.run(`left-b-${crossProcess}`, async () => {
        inB = true;
        while (!inA) await sleep(5);
        await sleep(50);
        return fair2.run(`left-a-${crossProcess}`, async () => 'second', { waitTime: 10_000 });
      }, { waitTime: 10_000 });
      const outcomes = await Promise.allSettled([p1, p2]);
      expect(outcomes.filter((o) => o.status === 'rejected' && o.reason instanceof LockDeadlockError)).toHaveLength(1);
      expect(await leftovers()).toEqual([]);
      expect(one.get(LockEngine).subscriber.channelCount + two.get(LockEngine).subscriber.channelCount).toBe(0);
      expect(graphSize()).toBe(0);
    }, 20_000);
  }

  it('plain locks, one waits in line behind the refused one: the line holds no dead entry', async () => {
    const locks = one.get(LockService);
    let inA = false;
    let inB = false;
    const p1 = locks.run('left2-a', async () => {
      inA = true;
      while (!inB) await sleep(5);
      return locks.run('left2-b', async () => 'first', { waitTime: 10_000 });
    }, { waitTime: 10_000 });
    const p2 = locks.run('left2-b', async () => {
      inB = true;
      while (!inA) await sleep(5);
      await sleep(50);
      return locks.run('left2-a', async () => 'second', { waitTime: 10_000 });
    }, { waitTime: 10_000 });
    const outcomes = await Promise.allSettled([p1, p2]);
    expect(outcomes.filter((o) => o.status === 'rejected')).toHaveLength(1);
    expect(await leftovers()).toEqual([]);
    expect(graphSize()).toBe(0);
  }, 20_000);
});
