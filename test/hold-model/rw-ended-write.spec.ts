import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockLostError, ReadWriteLockService } from '../../lib';
import type { OwnedLock } from '../../lib/locks/owned-lock';
import { releasesSettled, waitUntil } from '../support/lock-app';
import { ENGINES, type ContractEngine, type EngineHandle } from '../support/lock-contract';

/**
 * A read-write lock's write hold ends in Redis behind the library's back (an operator's DEL, a
 * flush, a restart) before the watchdog can tell, and the same owner then takes the READ lock: Redis
 * grants a brand-new read hold. Counting it as a downgrade of the write the owner no longer has
 * would hide the loss: the writer's body would go on, its signal live, while another process reads
 * (a writer and a foreign reader inside at once). A read grant carries no fencing token, so the
 * ended-episode check of a reentrant lock (a new token) cannot see it: Redis must say whether the
 * owner is still the writer, at the read grant and at every renewal of a hold that counts writes.
 * A nested `runRead` re-enters only what the owner holds in Redis now: it finds the write ended, the
 * writer is told, and the read is taken as an owner of its own, with a live signal
 * (docs/owners-and-reentry.md#the-owner-model).
 */
describe.each(ENGINES())('hold model: a read does not hide the end of its owner\'s write ($name)', (engine: ContractEngine) => {
  let redis: EngineHandle;
  let app: TestingModule;
  let otherApp: TestingModule;
  let raw: Redis;

  beforeAll(async () => {
    redis = await engine.start();
    raw = redis.client();
    // A long watchdog: no renewal round can notice the loss during these tests (but the last).
    app = await redis.createApp({ redis: redis.url, watchdogTimeout: 60_000 });
    otherApp = await redis.createApp({ redis: redis.url, watchdogTimeout: 60_000 });
  });
  afterAll(async () => {
    await otherApp?.close();
    await app?.close();
    (raw as { disconnect?: () => void })?.disconnect?.();
    await redis?.stop();
  });

  const rwKey = (name: string): string => `lock:rw:{${name}}`;

  /** The lock ends in Redis: its hash only (an operator's DEL), or its leases too (a flush, a restart). */
  async function endInRedis(name: string, flush: boolean): Promise<void> {
    await redis.del(rwKey(name));
    if (flush) await redis.del(`${rwKey(name)}:leases`);
  }

  /** Another process takes the read lock if it can: true when it overlapped the writer's live signal. */
  async function foreignReadOverlaps(name: string, writerSignal: AbortSignal): Promise<{ granted: boolean; overlapped: boolean }> {
    const foreign = otherApp.get(ReadWriteLockService).getReadWriteLock(name).readLock();
    const granted = await foreign.tryLock();
    const overlapped = granted && !writerSignal.aborted;
    if (granted) await foreign.unlock();
    return { granted, overlapped };
  }

  it.each([
    ['DEL of the hash', false],
    ['DEL of the hash and its leases', true],
  ])('runWrite + nested runRead after %s: the writer is told before another process can read', async (_how, flush) => {
    const rw = app.get(ReadWriteLockService);
    const name = `rw-ended-run-${flush ? 'flush' : 'del'}`;
    let writerSignal: AbortSignal | undefined;
    let abortedWhenInnerStarted = false;
    let innerStartedTold = false;
    let overlapped = false;
    let foreignGranted = false;
    await rw
      .runWrite(name, async ({ signal }) => {
        writerSignal = signal;
        await endInRedis(name, flush);
        await rw
          .runRead(name, async (inner) => {
            abortedWhenInnerStarted = signal.aborted;
            innerStartedTold = inner.signal.aborted;
            const foreign = await foreignReadOverlaps(name, signal);
            overlapped ||= foreign.overlapped;
            foreignGranted ||= foreign.granted;
          })
          .catch(() => undefined);
        const after = await foreignReadOverlaps(name, signal);
        overlapped ||= after.overlapped;
        foreignGranted ||= after.granted;
      })
      .catch(() => undefined);
    expect(overlapped).toBe(false);
    expect(abortedWhenInnerStarted).toBe(true);
    expect(innerStartedTold).toBe(false);
    expect(writerSignal?.reason).toBeInstanceOf(LockLostError);
    // Nothing was in the way of a reader: the check above is not vacuous.
    expect(foreignGranted).toBe(true);
    await releasesSettled(app);
    await releasesSettled(otherApp);
    expect(await redis.exists(rwKey(name))).toBe(0);
  });

  it('writeLock().lock(), DEL, readLock().lock() on the same object: the writer is told at the read grant', async () => {
    const rw = app.get(ReadWriteLockService);
    const name = 'rw-ended-raw';
    const lock = rw.getReadWriteLock(name);
    await lock.writeLock().lock();
    const writer = lock.writeLock() as unknown as OwnedLock;
    const writerSignal = writer.runContext().signal;
    await endInRedis(name, false);
    await lock.readLock().lock();
    expect(writerSignal.aborted).toBe(true);
    expect(writerSignal.reason).toBeInstanceOf(LockLostError);
    const foreign = await foreignReadOverlaps(name, writerSignal);
    expect(foreign.overlapped).toBe(false);
    expect(foreign.granted).toBe(true);
    await lock.readLock().unlock().catch(() => undefined);
    await lock.writeLock().unlock().catch(() => undefined);
    await releasesSettled(app);
    expect(await redis.exists(rwKey(name))).toBe(0);
  });

  describe('the watchdog', () => {
    let watchedApp: TestingModule;
    const watchdogTimeout = 600; // renewed every 200 ms

    beforeAll(async () => {
      watchedApp = await redis.createApp({ redis: redis.url, watchdogTimeout });
    });
    afterAll(async () => {
      await watchedApp?.close();
    });

    it('after DEL and a read of the same owner, the writer is told within a few watchdog periods', async () => {
      const name = 'rw-ended-watchdog';
      const lock = watchedApp.get(ReadWriteLockService).getReadWriteLock(name);
      await lock.writeLock().lock();
      const writerSignal = (lock.writeLock() as unknown as OwnedLock).runContext().signal;
      await endInRedis(name, false);
      await lock.readLock().lock();
      await waitUntil(() => writerSignal.aborted, 3 * watchdogTimeout);
      expect(writerSignal.reason).toBeInstanceOf(LockLostError);
      await lock.readLock().unlock().catch(() => undefined);
      await lock.writeLock().unlock().catch(() => undefined);
      await releasesSettled(watchedApp);
    });

    it('a real downgrade is not taken for a loss: write, read inside it, write released, renewed for several periods', async () => {
      const name = 'rw-downgrade-kept';
      const lock = watchedApp.get(ReadWriteLockService).getReadWriteLock(name);
      await lock.writeLock().lock();
      const signal = (lock.writeLock() as unknown as OwnedLock).runContext().signal;
      await lock.readLock().lock();
      await new Promise((resolve) => setTimeout(resolve, 2 * watchdogTimeout));
      expect(signal.aborted).toBe(false);
      await lock.writeLock().unlock();
      await new Promise((resolve) => setTimeout(resolve, 2 * watchdogTimeout));
      expect(signal.aborted).toBe(false);
      expect(await lock.readLock().getHoldCount()).toBe(1);
      // Another process reads beside the downgraded owner; a writer of its own still waits.
      const foreign = otherApp.get(ReadWriteLockService).getReadWriteLock(name);
      expect(await foreign.readLock().tryLock()).toBe(true);
      expect(await otherApp.get(ReadWriteLockService).getReadWriteLock(name).writeLock().tryLock()).toBe(false);
      await foreign.readLock().unlock();
      await lock.readLock().unlock();
      await releasesSettled(watchedApp);
      await releasesSettled(otherApp);
      expect(await redis.exists(rwKey(name))).toBe(0);
    });

    it('a renewal finds the write gone although a read of the owner remains in Redis', async () => {
      const name = 'rw-ended-watchdog-read-remains';
      const lock = watchedApp.get(ReadWriteLockService).getReadWriteLock(name);
      await lock.writeLock().lock();
      const writer = lock.writeLock() as unknown as OwnedLock;
      const writerSignal = writer.runContext().signal;
      // The write ends in Redis and a read hold of the same owner is there instead (as a read grant
      // this process never heard of would leave it; its lease entry is still the write's).
      const key = rwKey(name);
      await raw.call('hset', key, 'mode', 'read', `read:${writer.ownerId}`, '1', `since:${writer.ownerId}`, '0');
      await raw.call('hdel', key, 'writer', 'writes', 'fence');
      await raw.call('pexpire', key, String(watchdogTimeout));
      await waitUntil(() => writerSignal.aborted, 3 * watchdogTimeout);
      expect(writerSignal.reason).toBeInstanceOf(LockLostError);
      await lock.writeLock().unlock().catch(() => undefined);
      await releasesSettled(watchedApp);
    });
  });
});
