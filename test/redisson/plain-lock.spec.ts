import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService } from '../../lib';
import { LockEngine } from '../../lib/engine/lock-engine';
import { LuaScript } from '../../lib/redis/lua-script';
import { holdAccounts } from '../../lib/locks/redisson/redisson-base-lock';
import { createLockApp, deferred, releasesSettled, waitUntil } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * `LockService`'s lock in layout 'redisson' writes what Redisson's RLock writes, wakes whom it wakes,
 * and keeps its books by the owner's count (docs/redisson-interop.md#plain-lock). The peer here writes
 * Redisson's effects by hand; test/interop/ runs a real Java Redisson.
 */
describe("layout 'redisson': the plain lock (RLock)", () => {
  let redis: TestRedis;
  let app: TestingModule;
  let other: TestingModule;
  let raw: Redis;
  let seq = 0;
  const fresh = () => `order:${++seq}`;
  const locks = (moduleRef: TestingModule) => moduleRef.get(LockService);
  /** Every key but this library's own records (instance identities under the keyPrefix 'lock:'). */
  const redissonKeys = async () => (await raw.keys('*')).filter((key) => !key.startsWith('lock'));
  /** A Java holder, as Redisson's tryLockInnerAsync leaves it. */
  const javaHolds = async (name: string, leaseMs = 30_000) => {
    await raw.hincrby(name, 'c0ffee00-0000-4000-8000-000000000000:77', 1);
    await raw.pexpire(name, leaseMs);
  };

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, layout: 'redisson', watchdogTimeout: 900 });
    other = await createLockApp({ redis: redis.url, layout: 'redisson', watchdogTimeout: 900 });
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await redis?.stop();
  });

  it("holds as Redisson does: hash N of owner -> count with the lease as TTL, and nothing else but a latch that goes", async () => {
    const name = fresh();
    const { ownerId } = locks(app).getLock(name) as unknown as { ownerId: string };
    await locks(app).run(name, async () => {
      const hash = await raw.hgetall(name);
      const [owner] = Object.keys(hash);
      expect(owner).toMatch(/^[0-9a-f-]{36}:\d+$/);
      expect(hash[owner]).toBe('1');
      const ttl = await raw.pttl(name);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(900);
      await locks(app).run(name, async () => expect(await raw.hget(name, owner)).toBe('2'));
      await releasesSettled(app); // run sends its release without waiting for the answer
      expect(await raw.hget(name, owner)).toBe('1');
      expect(await redissonKeys()).toEqual([name]);
    });
    expect(ownerId).toBeDefined();
    await releasesSettled(app);
    // The release's latch is deleted once answered, as Redisson deletes its own.
    await waitUntil(async () => (await redissonKeys()).length === 0);
  });

  it("publishes '0' on redisson_lock__channel:{N} at the release, also for names with braces", async () => {
    for (const name of [fresh(), `order:{${++seq}}`]) {
      const channel = name.includes('{') ? `redisson_lock__channel:${name}` : `redisson_lock__channel:{${name}}`;
      const listener = redis.client();
      const heard = deferred<string>();
      listener.on('message', (ch: string, message: string) => ch === channel && heard.resolve(message));
      await listener.subscribe(channel);
      await locks(app).run(name, async () => undefined);
      expect(await heard.promise).toBe('0');
      listener.disconnect();
    }
  });

  it("a Java holder keeps it out; its release's '0' wakes the waiter at once, not at the 30 s TTL", async () => {
    const name = fresh();
    await javaHolds(name);
    expect(await locks(app).getLock(name).tryLock()).toBe(false);
    const waiter = locks(app).getLock(name);
    const started = Date.now();
    const acquired = waiter.tryLock({ waitTime: 20_000 });
    await waitUntil(() => app.get(LockEngine).subscriber.sleepingCount() > 0);
    // Redisson's unlock: the last count goes, the key is deleted, '0' is published.
    await raw.del(name);
    await raw.publish(`redisson_lock__channel:{${name}}`, '0');
    expect(await acquired).toBe(true);
    expect(Date.now() - started).toBeLessThan(10_000);
    await waiter.unlock();
  });

  it('a surplus count in Redis (a grant that ran twice) is taken back when the last counted hold is released', async () => {
    const name = fresh();
    const lock = locks(app).getLock(name);
    await lock.lock();
    const [owner] = Object.keys(await raw.hgetall(name));
    await raw.hincrby(name, owner, 1); // an ioredis resend that ran the acquire again
    await lock.unlock();
    await waitUntil(async () => (await raw.exists(name)) === 0);
    expect(await locks(other).getLock(name).tryLock()).toBe(true);
    await locks(other).getLock(name).forceUnlock();
    expect(holdAccounts(app.get(LockEngine)).size).toBe(0);
  });

  it('a grant that restarts the count (the hold had ended in Redis) tells the counted hold: its signal aborts', async () => {
    const name = fresh();
    await locks(app).run(name, async (outer) => {
      await raw.del(name);
      await locks(app).run(name, async () => undefined);
      expect(outer.signal.aborted).toBe(true);
    });
    await releasesSettled(app);
  });

  it('the unlock latch answers a resent release what the first answered, and only for that id', async () => {
    const name = fresh();
    const unlock = LuaScript.named('redisson-lock-unlock');
    const owner = '0f0f0f0f-0000-4000-8000-000000000000:1';
    await raw.hincrby(name, owner, 2);
    await raw.pexpire(name, 30_000);
    const latch = (id: string) => `redisson_unlock_latch:{${name}}:${id.repeat(32)}`;
    const run = (id: string) => unlock.run(raw, [name, `redisson_lock__channel:{${name}}`, latch(id)], [owner, 'PUBLISH', 10_000, '']);
    expect(await run('a')).toBe(0);
    expect(await run('a')).toBe(0); // resent: replayed, the count is not taken twice
    expect(await raw.hget(name, owner)).toBe('1');
    expect(await run('b')).toBe(1);
    expect(await raw.exists(name)).toBe(0);
    expect(await run('c')).toBeNull(); // not held
    const ttl = await raw.pttl(latch('b'));
    expect(ttl).toBeGreaterThan(0);
  });

  it('the surplus form never takes a count the process accounts for', async () => {
    const name = fresh();
    const unlock = LuaScript.named('redisson-lock-unlock');
    const owner = '0f0f0f0f-0000-4000-8000-000000000000:2';
    await raw.hincrby(name, owner, 3);
    await raw.pexpire(name, 30_000);
    const surplus = (guard: number) =>
      unlock.run(raw, [name, `redisson_lock__channel:{${name}}`, `redisson_unlock_latch:{${name}}:${'0'.repeat(32)}`], [owner, 'PUBLISH', 0, String(guard)]);
    expect(await surplus(3)).toBe(-1);
    expect(await surplus(5)).toBe(-1);
    expect(await raw.hget(name, owner)).toBe('3');
    expect(await surplus(1)).toBe(0);
    expect(await raw.hget(name, owner)).toBe('1');
    expect(await surplus(0)).toBe(1);
    expect(await raw.exists(name)).toBe(0);
    expect(await raw.keys(`redisson_unlock_latch:{${name}}:*`)).toEqual([]);
  });

  it('renews past the lease with the watchdog; a Java waiter would see a TTL the whole time', async () => {
    const name = fresh();
    await locks(app).run(name, async () => {
      for (let i = 0; i < 6; i++) {
        await new Promise((r) => setTimeout(r, 450));
        const ttl = await raw.pttl(name);
        expect(ttl).toBeGreaterThan(0);
        expect(await locks(other).getLock(name).tryLock()).toBe(false);
      }
    });
  });

  it('with a nameMapper, the key is the mapped name and the owner context follows the caller\'s name', async () => {
    const mapped = await createLockApp({ redis: redis.url, layout: 'redisson', redisson: { nameMapper: (n: string) => `tenant-a:${n}` } });
    try {
      const name = fresh();
      await mapped.get(LockService).run(name, async (context) => {
        expect(context.name).toBe(name);
        expect(await raw.hlen(`tenant-a:${name}`)).toBe(1);
        expect(await raw.exists(name)).toBe(0);
      });
    } finally {
      await mapped.close();
    }
  });

  it('fencedLocks: every grant INCRs redisson_lock_token:{N} (never expiring); a re-entry keeps the hold\'s token', async () => {
    const fenced = await createLockApp({ redis: redis.url, layout: 'redisson', redisson: { fencedLocks: true } });
    try {
      const name = fresh();
      const tokens: number[] = [];
      for (let i = 0; i < 3; i++) {
        await fenced.get(LockService).run(name, async (context) => {
          tokens.push(context.fencingToken as number);
          await fenced.get(LockService).run(name, async (inner) => expect(inner.fencingToken).toBe(context.fencingToken));
        });
      }
      expect(tokens).toEqual([1, 3, 5]);
      expect(await raw.get(`redisson_lock_token:{${name}}`)).toBe('6');
      expect(await raw.pttl(`redisson_lock_token:{${name}}`)).toBe(-1);
      await expect(fenced.get(LockService).getLock(name).forceUnlock({ fencingToken: 5 })).rejects.toThrow(TypeError);
    } finally {
      await fenced.close();
    }
  });
});
