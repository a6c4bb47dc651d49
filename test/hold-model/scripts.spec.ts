import type { TestingModule } from '@nestjs/testing';
import { LockService } from '../../lib';
import { createLockApp } from '../support/lock-app';
import { evictEvalScripts, scriptEvictingServerBin, startServerBinary } from '../support/redis-topologies';

const bin = scriptEvictingServerBin();

/**
 * Redis 7.4+ evicts EVAL-loaded scripts beyond 500. The library's scripts must not be among them
 * (they are loaded with SCRIPT LOAD), or a run's release answers NOSCRIPT and is resent after the
 * command that follows it: `run()` then `tryLock()` on the same connection would find the lock held.
 */
(bin ? describe : describe.skip)(`hold model: scripts on a server that evicts EVAL scripts${bin ? '' : ' (skipped: no Redis 7.4+ binary found)'}`, () => {
  let server: Awaited<ReturnType<typeof startServerBinary>>;
  let app: TestingModule;

  beforeAll(async () => {
    server = await startServerBinary(bin!);
    app = await createLockApp({ redis: server.url });
  });
  afterAll(async () => {
    await app?.close();
    await server?.dispose();
  });

  it('after 600 other EVAL scripts ran during a body, run() then tryLock() finds the lock free', async () => {
    const raw = server.client();
    const locks = app.get(LockService);
    // A first run makes the server known to have the scripts: from then on they go out as EVALSHA.
    await locks.run('evicted', () => undefined);
    await locks.getLock('evicted').isLocked();
    await locks.run('evicted', async () => {
      await evictEvalScripts(raw);
      // Another acquisition brings the acquire script back; the release script stays evicted.
      await locks.getLock('evicted-neighbour').tryLock({ leaseTime: 1_000 });
    });
    const next = locks.getLock('evicted');
    const acquired = await next.tryLock();
    if (acquired) await next.unlock();
    expect(acquired).toBe(true);
  });
});
