import type { TestingModule } from '@nestjs/testing';
import { ReadWriteLockService } from '../../lib';
import { LockKeys } from '../../lib/redis/lock-keys';
import { createLockApp, waitersQueued } from '../support/lock-app';
import { startRedis } from '../support/redis-server';
import { settled } from '../support/hold-handles';

/**
 * Review of issue 41 e/f (DESIGN §24: "read holds ... get an episode id of their own"; "after a loss,
 * the unlocks owed to the lost episode are settled first and never release a later episode").
 *
 * A read handed over by a release (rw-grant-line's `granted:` message: token '0', no episode) is
 * recorded without `readEpisode` (Acquisition.handedOver -> ReadWriteLockView.held): so the record
 * has no episode to compare with (`endedReadFound` returns early) and no episode to name on release.
 * One read-write object, two flows: flow A's read is handed over; its hold is lost (DEL); flow B reads
 * again (a new episode in Redis), counted as a re-entry of A's record; A's `unlock()` then releases
 * B's read in Redis, and a writer of another instance enters while flow B still holds.
 * Control: the same with flow A's read granted by its own attempt (it has an episode).
 * Fixed: a read's grant message carries its episode (rw-grant-line), so A is told and its owed
 * unlock names the ended episode, which Redis refuses.
 */
const keys = new LockKeys('lock:');

describe('review: a handed-over read has no episode', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let app: TestingModule;
  let other: TestingModule;
  beforeAll(async () => {
    redis = await startRedis();
    app = await createLockApp({ redis: redis.url, watchdogTimeout: 30_000 });
    other = await createLockApp({ redis: redis.url, watchdogTimeout: 30_000 });
  });
  afterAll(async () => {
    await other?.close();
    await app?.close();
    await redis?.stop();
  });

  it.each([{ handedOver: true }, { handedOver: false }])('flow A read handed over: $handedOver', async ({ handedOver }) => {
    const name = `review-read-${Math.random().toString(36).slice(2)}`;
    const rwKey = keys.readWrite(name);
    const raw = redis.client();
    const rw = app.get(ReadWriteLockService).getReadWriteLock(name);
    const writer = other.get(ReadWriteLockService).getReadWriteLock(name).writeLock();
    try {
      if (handedOver) {
        await writer.lock();
        const flowA = rw.readLock().lock();
        await waitersQueued(app, 1);
        await writer.unlock();
        await flowA;
      } else {
        await rw.readLock().lock();
      }
      // Lost behind its holders' back.
      await raw.del(rwKey, LockKeys.readWriteLeases(rwKey));
      // Flow B reads again through the same object: a new read episode in Redis.
      await rw.readLock().lock();
      const episodeB = await raw.hgetall(rwKey);
      // Flow A's finally: its unlock is owed to the ended episode.
      const unlockA = await settled(rw.readLock().unlock());
      // Flow B still believes it reads: no writer may be in.
      const writerGot = await writer.tryLock({ waitTime: 0 });
      if (writerGot) await writer.unlock();
      const unlockB = await settled(rw.readLock().unlock());
      // Received on main 301043b with a handed-over read: { unlockA: 'resolved', writerGot: true, unlockB: 'LockNotHeldError' }.
      expect({ unlockA, writerGot, unlockB, episodeB: Object.keys(episodeB).some((f) => f.startsWith('since:')) }).toEqual({
        unlockA: 'LockNotHeldError',
        writerGot: false,
        unlockB: 'resolved',
        episodeB: true,
      });
    } finally {
      raw.disconnect();
      await other.get(ReadWriteLockService).getReadWriteLock(name).writeLock().forceUnlock().catch(() => undefined);
    }
  });
});
