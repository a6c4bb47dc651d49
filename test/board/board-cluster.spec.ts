import type { INestApplication } from '@nestjs/common';
import type { Cluster } from 'ioredis';
import { LockService, SemaphoreService } from '../../lib';
import type { BoardSnapshot } from '../../lib/board';
import { describeOnCluster, namesOnEveryMaster, startRedisCluster, type TestRedisCluster } from '../support/redis-cluster';
import { waitFor } from '../support/wait-for';
import { AUTH, startBoardApp } from './board-app';

/**
 * The board on a Redis Cluster of 3 masters: its walk SCANs every master, inspects each lock on its
 * own slot, finds holders' instances (which live in other slots) and reads contention counters.
 */
describeOnCluster('lock board on a Redis Cluster (3 masters)', () => {
  let cluster: TestRedisCluster;
  let raw: Cluster;
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    raw = cluster.cluster();
    ({ app, url } = await startBoardApp('express', { redis: cluster.cluster(), clientName: 'cluster-board' }, { refreshMs: 250 }));
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    raw?.disconnect();
    await cluster?.stop();
  });

  it('shows locks held on every master, with their instances, and a semaphore', async () => {
    const names = (await namesOnEveryMaster(cluster, 'board', 1, (name) => `lock:{${name}}`)).flat();
    const locks = names.map((name) => app.get(LockService).getLock(name));
    for (const lock of locks) await lock.lock();
    const permit = await app.get(SemaphoreService).getSemaphore('board-pool', { permits: 2 }).acquire();
    let view: BoardSnapshot | undefined;
    await waitFor(
      async () => {
        view = (await (await fetch(`${url}/api/lock-board/api/snapshot`, { headers: AUTH })).json()) as BoardSnapshot;
        return names.every((name) => view!.locks.some((lock) => lock.name === name)) && view.semaphores.some((s) => s.name === 'board-pool');
      },
      { what: 'every master walked', timeoutMs: 10_000, stepMs: 260 },
    );
    expect(view!.walk.complete).toBe(true);
    for (const lock of view!.locks) expect(lock.holders[0].instance?.clientName).toBe('cluster-board');
    for (const lock of locks) await lock.unlock();
    await permit.release();
  });
});
