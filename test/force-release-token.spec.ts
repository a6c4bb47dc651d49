import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockLostError, LockNotHeldError, ReadWriteLockService, SemaphoreService } from '../lib';
import { waitUntil } from './support/lock-app';
import { ENGINES, type ContractEngine, type EngineHandle } from './support/lock-contract';

/**
 * A force release conditional on the fencing token an operator saw (the lock contract covers the
 * exclusive kinds): a semaphore holder's permits, and a read lock (no token: refused). On Redis
 * and on the testing kit.
 */
describe.each(ENGINES())('force release on a fencing token ($name)', (engine: ContractEngine) => {
  let redis: EngineHandle;
  let app: TestingModule;
  let other: TestingModule;
  let raw: Redis;
  let seq = 0;
  const fresh = (base: string) => `force-token:${base}:${++seq}`;

  beforeAll(async () => {
    redis = await engine.start();
    app = await redis.createApp({ redis: redis.url, watchdogTimeout: 600 });
    other = await redis.createApp({ redis: redis.url, watchdogTimeout: 600 });
    raw = redis.client();
  });
  afterAll(async () => {
    raw?.disconnect();
    await app?.close();
    await other?.close();
    await redis?.stop();
  });

  it('SemaphoreService.forceRelease takes one holder\'s permits back only with its token, and the line gets them', async () => {
    const name = fresh('sem');
    const semaphores = other.get(SemaphoreService);
    const held = await app.get(SemaphoreService).getSemaphore(name, { permits: 3 }).acquire({ take: 2 });
    const bystander = await app.get(SemaphoreService).getSemaphore(name, { permits: 3 }).acquire({ take: 1 });
    const waiting = other.get(SemaphoreService).getSemaphore(name, { permits: 3 }).acquire({ take: 2, waitTime: 10_000 });
    await waitUntil(async () => (await semaphores.inspect(name)).waiters.length === 1);

    await expect(semaphores.forceRelease(name, { fencingToken: 0 })).rejects.toThrow(TypeError);
    await expect(semaphores.forceRelease(name, { fencingToken: held.fencingToken!, permitId: '' })).rejects.toThrow(TypeError);
    // Not the token the holder has, or not that holder's: nothing changes.
    expect(await semaphores.forceRelease(name, { fencingToken: held.fencingToken! + 1_000 })).toBe(false);
    expect(await semaphores.forceRelease(name, { permitId: bystander.ownerId, fencingToken: held.fencingToken! })).toBe(false);
    expect((await semaphores.inspect(name)).holders.map((h) => h.ownerId).sort()).toEqual([held.ownerId, bystander.ownerId].sort());

    // By its token alone (as an operator saw it): taken back, and the waiter in line gets them.
    expect(await semaphores.forceRelease(name, { fencingToken: held.fencingToken! })).toBe(true);
    const granted = await waiting;
    expect(granted.fencingToken).toBeGreaterThan(held.fencingToken!);
    const info = await semaphores.inspect(name);
    expect(info.holders.map((h) => h.ownerId).sort()).toEqual([bystander.ownerId, granted.ownerId].sort());
    expect(info).toMatchObject({ permits: 3, available: 0, waiters: [] });
    expect(await semaphores.forceRelease(name, { fencingToken: held.fencingToken! })).toBe(false);

    // The holder learns it at its next renewal, and its release says it held nothing.
    await waitUntil(() => held.signal.aborted, 5_000);
    expect(held.signal.reason).toBeInstanceOf(LockLostError);
    await expect(held.release()).rejects.toThrow(LockNotHeldError);

    // With its permit id too.
    expect(await semaphores.forceRelease(name, { permitId: granted.ownerId, fencingToken: granted.fencingToken! })).toBe(true);
    expect((await semaphores.inspect(name)).holders.map((h) => h.ownerId)).toEqual([bystander.ownerId]);
    await bystander.release();
    expect(await semaphores.forceRelease(name, { fencingToken: bystander.fencingToken! })).toBe(false);
    expect(await raw.exists(`lock:sem:{${name}}`)).toBe(0);
  });

  it('a read lock has no token: forceUnlock({ fencingToken }) is refused, and the plain call works as before', async () => {
    const name = fresh('read');
    const reader = app.get(ReadWriteLockService).getReadWriteLock(name).readLock();
    await reader.lock();
    const operator = other.get(ReadWriteLockService).getReadWriteLock(name);
    await expect(operator.readLock().forceUnlock({ fencingToken: 1 })).rejects.toThrow(TypeError);
    // The write view with a token does not release a read-held lock.
    expect(await operator.writeLock().forceUnlock({ fencingToken: 1 })).toBe(false);
    expect(await reader.isHeldByCurrentOwner()).toBe(true);
    expect(await operator.readLock().forceUnlock()).toBe(true);
    expect(await reader.isHeldByCurrentOwner()).toBe(false);
  });
});
