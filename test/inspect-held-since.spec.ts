import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockInfo, LockService, ReadWriteLockService, SemaphoreService } from '../lib';
import { sleep, waitersQueued, waitUntil } from './support/lock-app';
import { ENGINES, type ContractEngine, type EngineHandle } from './support/lock-contract';

/**
 * `inspect()` answers on the server's clock: `serverTime` (Redis TIME, read by the inspect script)
 * and each holder's `heldSince`, whichever path granted the hold (a first attempt, a waiter's
 * attempt, a grant from the line, a read hold, a semaphore's permits), kept by a re-entry. A
 * semaphore waiter's permits asked for are reported too. On Redis and on the testing kit.
 */
describe.each(ENGINES())('inspect: serverTime, heldSince, semaphore waiters\' permits ($name)', (engine: ContractEngine) => {
  let redis: EngineHandle;
  let app: TestingModule;
  let other: TestingModule;
  let raw: Redis;
  let seq = 0;
  const fresh = (base: string) => `held-since:${base}:${++seq}`;

  beforeAll(async () => {
    redis = await engine.start();
    app = await redis.createApp({ redis: redis.url, watchdogTimeout: 5_000 });
    other = await redis.createApp({ redis: redis.url, watchdogTimeout: 5_000 });
    raw = redis.client();
  });
  afterAll(async () => {
    raw?.disconnect();
    await app?.close();
    await other?.close();
    await redis?.stop();
  });

  const serverNow = async (): Promise<number> => {
    const [seconds, micros] = await raw.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };
  /** Runs `grant` between two readings of the server's clock. */
  const between = async (grant: () => Promise<unknown>): Promise<[number, number]> => {
    const before = await serverNow();
    await grant();
    return [before, await serverNow()];
  };
  const expectWithin = (value: number | undefined, [from, to]: [number, number]) => {
    expect(value).toEqual(expect.any(Number));
    expect(value).toBeGreaterThanOrEqual(from);
    expect(value).toBeLessThanOrEqual(to);
  };
  const expectServerTime = async (info: { serverTime: number }, asked: [number, number]) => expectWithin(info.serverTime, asked);

  it('a reentrant hold: heldSince from the grant on the first attempt, kept by a re-entry; serverTime is the server\'s', async () => {
    const name = fresh('reentrant');
    const lock = app.get(LockService).getLock(name);
    const granted = await between(() => lock.lock());
    await sleep(30);
    await lock.lock();
    const asked = [await serverNow(), 0] as [number, number];
    const info = await app.get(LockService).inspect(name);
    asked[1] = await serverNow();
    await expectServerTime(info, asked);
    expect(info.holders).toHaveLength(1);
    expect(info.holders[0].holdCount).toBe(2);
    expectWithin(info.holders[0].heldSince, granted);
    expect(info.serverTime - info.holders[0].heldSince!).toBeGreaterThanOrEqual(30);
    await lock.unlock();
    await lock.unlock();
    const free = await app.get(LockService).inspect(name);
    expect(free).toEqual({ name, kind: 'reentrant', locked: false, ttl: -2, holders: [], serverTime: expect.any(Number) });
  });

  it('a fair lock handed over from its line: the waiter\'s heldSince is the hand-off, not its first attempt', async () => {
    const name = fresh('fair');
    const holder = app.get(FairLockService).getLock(name);
    await holder.lock();
    const waiter = other.get(FairLockService).getLock(name);
    const waiting = waiter.tryLock({ waitTime: 10_000 });
    await waitersQueued(other);
    await sleep(40);
    const handedOver = await between(() => holder.unlock());
    expect(await waiting).toBe(true);
    const info = await other.get(FairLockService).inspect(name);
    expect(info).toMatchObject({ kind: 'fair', locked: true, fencingToken: waiter.getFencingToken() });
    expectWithin(info.holders[0].heldSince, [handedOver[0], await serverNow()]);
    await waiter.unlock();
  });

  it('a lock taken by a waiter\'s own attempt (the acquire script) has its heldSince too', async () => {
    const name = fresh('acquire');
    const holder = app.get(LockService).getLock(name);
    await holder.lock({ leaseTime: 150 });
    const waiter = other.get(LockService).getLock(name);
    const started = await serverNow();
    expect(await waiter.tryLock({ waitTime: 5_000 })).toBe(true);
    const info = await other.get(LockService).inspect(name);
    expectWithin(info.holders[0].heldSince, [started + 100, await serverNow()]);
    await waiter.unlock();
  });

  it('a read-write lock: each reader\'s own heldSince, kept by a re-entry and gone with its last read hold; the writer\'s from its grant', async () => {
    const name = fresh('rw');
    const rw = app.get(ReadWriteLockService);
    const first = rw.getReadWriteLock(name).readLock();
    const firstGranted = await between(() => first.lock());
    await sleep(30);
    const second = other.get(ReadWriteLockService).getReadWriteLock(name).readLock();
    const secondGranted = await between(() => second.lock());
    await first.lock(); // a re-entry keeps the first hold's start
    const info = await rw.inspect(name);
    expect(info.holders).toHaveLength(2);
    const holders = [...info.holders].sort((a, b) => a.heldSince! - b.heldSince!);
    expect(holders.map((h) => h.holdCount)).toEqual([2, 1]);
    expectWithin(holders[0].heldSince, firstGranted);
    expectWithin(holders[1].heldSince, secondGranted);
    expect(holders[0].heldSince).toBeLessThan(holders[1].heldSince!);
    await first.unlock();
    await first.unlock();
    await second.unlock();
    // Nothing of a read hold's start outlives it.
    expect(await raw.exists(`lock:rw:{${name}}`)).toBe(0);

    const reader = rw.getReadWriteLock(name).readLock();
    await reader.lock();
    await reader.unlock();
    const stillRead = other.get(ReadWriteLockService).getReadWriteLock(name).readLock();
    await stillRead.lock();
    const again = rw.getReadWriteLock(name).readLock();
    await again.lock();
    await again.unlock();
    // The other reader's hold keeps the hash; the released reader's start went with its hold.
    expect(Object.keys(await raw.hgetall(`lock:rw:{${name}}`)).filter((f) => f.startsWith('since:'))).toHaveLength(1);
    await stillRead.unlock();

    const write = rw.getReadWriteLock(name).writeLock();
    const writeGranted = await between(() => write.lock());
    const written = await rw.inspect(name);
    expect(written.holders).toEqual([expect.objectContaining({ mode: 'write' })]);
    expectWithin(written.holders[0].heldSince, writeGranted);
    await write.unlock();
  });

  it('readers granted from the line get their heldSince at the hand-off', async () => {
    const name = fresh('rw-line');
    const write = app.get(ReadWriteLockService).getReadWriteLock(name).writeLock();
    await write.lock();
    const reader = other.get(ReadWriteLockService).getReadWriteLock(name).readLock();
    const waiting = reader.tryLock({ waitTime: 10_000 });
    await waitersQueued(other);
    await sleep(40);
    const handedOver = await between(() => write.unlock());
    expect(await waiting).toBe(true);
    const info = await other.get(ReadWriteLockService).inspect(name);
    expect(info.holders).toEqual([expect.objectContaining({ mode: 'read', holdCount: 1 })]);
    expectWithin(info.holders[0].heldSince, [handedOver[0], await serverNow()]);
    await reader.unlock();
    expect(await raw.exists(`lock:rw:{${name}}`)).toBe(0);
  });

  it('a semaphore: each holder\'s heldSince (a grant from the line too), serverTime, and the permits each waiter asks for', async () => {
    const name = fresh('sem');
    const semaphores = app.get(SemaphoreService);
    const semaphore = semaphores.getSemaphore(name, { permits: 3 });
    let first!: Awaited<ReturnType<typeof semaphore.acquire>>;
    const firstGranted = await between(async () => (first = await semaphore.acquire({ take: 2 })));
    const waiter = other.get(SemaphoreService).getSemaphore(name, { permits: 3 });
    const waiting = waiter.acquire({ take: 2, waitTime: 10_000 });
    await waitUntil(async () => (await semaphores.inspect(name)).waiters.length === 1);

    const asked: [number, number] = [await serverNow(), 0];
    const info = await semaphores.inspect(name);
    asked[1] = await serverNow();
    expectWithin(info.serverTime, asked);
    expect(info.holders).toEqual([expect.objectContaining({ ownerId: first.ownerId, permits: 2, fencingToken: first.fencingToken })]);
    expectWithin(info.holders[0].heldSince, firstGranted);
    expect(info.waiters).toEqual([{ ownerId: expect.any(String), permits: 2 }]);

    // list() reports the same waiter with its permits asked for (it used to drop them).
    const listed: LockInfo[] = [];
    for await (const found of app.get(LockService).list({ match: name })) listed.push(found);
    expect(listed).toHaveLength(1);
    expect(listed[0].waiters).toEqual([expect.objectContaining({ ownerId: info.waiters[0].ownerId, permits: 2 })]);
    expectWithin(listed[0].holders[0].heldSince, firstGranted);
    expect(listed[0].serverTime).toEqual(expect.any(Number));

    await sleep(40);
    const handedOver = await between(() => first.release());
    const second = await waiting;
    const after = await semaphores.inspect(name);
    expect(after.holders).toEqual([expect.objectContaining({ ownerId: second.ownerId, permits: 2 })]);
    expectWithin(after.holders[0].heldSince, [handedOver[0], await serverNow()]);
    await second.release();
  });
});
