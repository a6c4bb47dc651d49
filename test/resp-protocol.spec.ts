import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockService, ReadWriteLockService } from '../lib';
import { createLockApp, deferred, waitersQueued } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';
import { waitFor } from './support/wait-for';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const ioredisMajor = Number((require('ioredis/package.json') as { version: string }).version.split('.')[0]);

/**
 * ioredis 6 speaks RESP3 by default (ioredis 5: RESP2). CI runs the whole suite on both majors; this
 * suite pins down, on whichever is installed, that the library's connections really use the
 * protocol the client chose, and that scripts' nil replies and the pub/sub hand-off work on both
 * protocols (RESP3 delivers unlock messages as push frames on the subscriber connection).
 */
describe(`RESP protocols (ioredis ${ioredisMajor})`, () => {
  let redis: TestRedis;
  let admin: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    admin = redis.client();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  const protocols: Array<2 | 3 | undefined> = ioredisMajor >= 6 ? [undefined, 2, 3] : [undefined];

  describe.each(protocols)('protocol %s', (protocol) => {
    const expected = protocol ?? (ioredisMajor >= 6 ? 3 : 2);
    let app: TestingModule;
    beforeAll(async () => {
      const port = redis.port;
      app = await createLockApp({
        redis: { host: '127.0.0.1', port, ...(protocol === undefined ? {} : ({ protocol } as object)) },
      });
    });
    afterAll(async () => {
      await app?.close();
    });

    it(`the command and subscriber connections speak RESP${expected}`, async () => {
      const locks = app.get(LockService);
      const holder = locks.getLock(`resp${expected}:probe`);
      await holder.lock();
      const waiting = locks.run(`resp${expected}:probe`, async () => 'ran', { waitTime: 5_000 });
      await waitersQueued(app, 1);
      let mine: string[] = [];
      // A seated waiter's subscription may still be on its way: wait for both connections to show.
      await waitFor(
        async () => {
          const list = (await admin.client('LIST')) as string;
          mine = list.split('\n').filter((line) => / name=lock/.test(line));
          return mine.some((line) => / name=lock-commands /.test(line)) && mine.some((line) => / name=lock-subscriber /.test(line));
        },
        { what: 'the command and subscriber connections in CLIENT LIST' },
      );
      expect(mine.length).toBeGreaterThanOrEqual(2);
      for (const line of mine) expect(line).toContain(` resp=${expected}`);
      await holder.unlock();
      await expect(waiting).resolves.toBe('ran');
    });

    it('nil script replies mean "acquired" and a busy lock answers its TTL, for every lock kind', async () => {
      const locks = app.get(LockService);
      const fair = app.get(FairLockService);
      const rw = app.get(ReadWriteLockService);
      const plain = locks.getLock('resp:kinds');
      expect(await plain.tryLock({ waitTime: 0 })).toBe(true);
      expect(await locks.getLock('resp:kinds').tryLock({ waitTime: 0 })).toBe(false);
      expect(await plain.remainTimeToLive()).toBeGreaterThan(0);
      expect(await plain.isLocked()).toBe(true);
      await plain.unlock();
      expect(await plain.isLocked()).toBe(false);
      expect(await plain.remainTimeToLive()).toBe(-2);

      const first = fair.getLock('resp:fair');
      expect(await first.tryLock({ waitTime: 0 })).toBe(true);
      expect(await fair.getLock('resp:fair').tryLock({ waitTime: 0 })).toBe(false);
      await first.unlock();

      const readWrite = rw.getReadWriteLock('resp:rw');
      expect(await readWrite.readLock().tryLock({ waitTime: 0 })).toBe(true);
      expect(await rw.getReadWriteLock('resp:rw').writeLock().tryLock({ waitTime: 0 })).toBe(false);
      expect(await readWrite.readLock().getHoldCount()).toBe(1);
      await readWrite.readLock().unlock();
      expect(await rw.getReadWriteLock('resp:rw').writeLock().tryLock({ waitTime: 0 })).toBe(true);
    });

    it('a waiter is handed the lock by the unlock message, long before the lease ends', async () => {
      const locks = app.get(LockService);
      const release = deferred();
      const entered = deferred();
      const holding = locks.run(
        'resp:handoff',
        () => {
          entered.resolve();
          return release.promise;
        },
        { leaseTime: 20_000 },
      );
      await entered.promise;
      const started = Date.now();
      const waiting = locks.run('resp:handoff', async () => Date.now() - started, { waitTime: 10_000 });
      await waitersQueued(app, 1);
      release.resolve();
      await holding;
      expect(await waiting).toBeLessThan(2_000);
    });
  });
});
