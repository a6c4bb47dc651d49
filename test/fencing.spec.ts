import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockService, ReadWriteLockService } from '../lib';
import { completion, spawnFixture } from './support/child-process';
import { createLockApp, waitUntil } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';

const strictlyIncreasing = (tokens: number[]): boolean => tokens.every((token, i) => i === 0 || token > tokens[i - 1]);

/** Fencing tokens: strictly increasing per lock name, across processes, kinds and idle periods. */
describe('fencing tokens', () => {
  let redis: TestRedis;
  let app: TestingModule;
  let raw: Redis;
  let counter = 0;
  const fresh = () => `fenced-${++counter}`;

  beforeAll(async () => {
    redis = await startRedis();
    app = await createLockApp({ redis: redis.url });
    raw = redis.client();
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it.each(['reentrant', 'fair', 'write'])(
    '%s: 3 processes x 50 acquisitions hand out strictly increasing safe integers in acquisition order',
    async (kind) => {
      const name = fresh();
      const workers = [1, 2, 3].map(() => spawnFixture('counter-worker', [redis.url, kind, name, '50']));
      await Promise.all(workers.map(completion));
      const tokens = (await raw.lrange(`tokens:${kind}:${name}`, 0, -1)).map(Number);
      expect(tokens).toHaveLength(150);
      expect(tokens.every(Number.isSafeInteger)).toBe(true);
      expect(strictlyIncreasing(tokens)).toBe(true);
      expect(Number(await raw.get(`counter:${kind}:${name}`))).toBe(150); // and no lost update
    },
    60_000,
  );

  it('keeps increasing after the fence key expired (the name was idle)', async () => {
    const name = fresh();
    const locks = app.get(LockService);
    const first = await locks.run(name, async ({ fencingToken }) => fencingToken!);
    await raw.pexpire(`lock:{${name}}:fence`, 1);
    await waitUntil(async () => (await raw.exists(`lock:{${name}}:fence`)) === 0);
    const second = await locks.run(name, async ({ fencingToken }) => fencingToken!);
    expect(second).toBeGreaterThan(first);
  });

  it('the fence key expires by itself: no key is kept per lock name forever', async () => {
    const name = fresh();
    await app.get(LockService).run(name, async () => undefined);
    const ttl = await raw.pttl(`lock:{${name}}:fence`);
    expect(ttl).toBeGreaterThan(0);
  });

  it('a re-entry keeps the token, getFencingToken() needs no round trip, and a free lock has none', async () => {
    const lock = app.get(LockService).getLock(fresh());
    expect(lock.getFencingToken()).toBeUndefined();
    await lock.lock();
    const token = lock.getFencingToken();
    expect(Number.isSafeInteger(token)).toBe(true);
    await lock.lock(); // a re-entry of the same owner
    expect(lock.getFencingToken()).toBe(token);
    expect(await lock.getHoldCount()).toBe(2);
    await lock.unlock();
    expect(lock.getFencingToken()).toBe(token);
    await lock.unlock();
    expect(lock.getFencingToken()).toBeUndefined();
  });

  it('the plain and the fair lock of a name share one token sequence; a read lock carries none', async () => {
    const name = fresh();
    const plain = await app.get(LockService).run(name, async ({ fencingToken }) => fencingToken!);
    const fair = await app.get(FairLockService).run(name, async ({ fencingToken }) => fencingToken!);
    expect(fair).toBeGreaterThan(plain);
    const rw = app.get(ReadWriteLockService);
    expect(await rw.runRead(name, async ({ fencingToken }) => fencingToken)).toBeUndefined();
    const write = await rw.runWrite(name, async ({ fencingToken }) => fencingToken!);
    const nextWrite = await rw.runWrite(name, async ({ fencingToken }) => fencingToken!);
    expect(nextWrite).toBeGreaterThan(write);
  });

  it("a multi-lock's run gets each member's token", async () => {
    const [a, b] = [fresh(), fresh()];
    const tokens = await app.get(LockService).run([a, b], async ({ fencingToken, fencingTokens }) => {
      expect(fencingToken).toBeUndefined();
      return fencingTokens!;
    });
    expect(Object.keys(tokens).sort()).toEqual([a, b].sort());
    expect(Object.values(tokens).every(Number.isSafeInteger)).toBe(true);
  });

  it("getMultiLock's getFencingTokens() (typed without a cast): each held member's token", async () => {
    const locks = app.get(LockService);
    const [a, b] = [fresh(), fresh()];
    const multi = locks.getMultiLock(locks.getLock(a), locks.getLock(b));
    await multi.lock();
    try {
      const tokens = multi.getFencingTokens();
      expect(Object.keys(tokens).sort()).toEqual([a, b].sort());
      expect(multi.getFencingToken()).toBeUndefined();
    } finally {
      await multi.unlock();
    }
    expect(multi.getFencingTokens()).toEqual({});
  });
});
