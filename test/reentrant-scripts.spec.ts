import type { TestingModule } from '@nestjs/testing';
import { LockService } from '../lib';
import { LuaScript } from '../lib/redis/lua-script';
import { createLockApp } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';

/** Script-level guarantees: resends do not change the outcome, and a flushed script cache recovers. */
describe('reentrant lock scripts', () => {
  let redis: TestRedis;
  let app: TestingModule;
  beforeAll(async () => {
    redis = await startRedis();
    app = await createLockApp({ redis: redis.url });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('a resent acquire (same request id) does not raise the hold count twice', async () => {
    const raw = redis.client();
    const acquire = LuaScript.named('reentrant-acquire');
    const key = 'lock:{resent-acquire}';
    expect(await acquire.run(raw, [key], [10_000, 'owner-1', 'r1'])).toBeNull();
    expect(await acquire.run(raw, [key], [10_000, 'owner-1', 'r1'])).toBeNull(); // the resend
    expect(await raw.hget(key, 'owner-1')).toBe('1');
    expect(await acquire.run(raw, [key], [10_000, 'owner-1', 'r2'])).toBeNull(); // a real re-entry
    expect(await raw.hget(key, 'owner-1')).toBe('2');
    expect(Number(await acquire.run(raw, [key], [10_000, 'owner-2', 'r3']))).toBeGreaterThan(0);
  });

  it('a resent release returns its first answer instead of "not held"', async () => {
    const raw = redis.client();
    const acquire = LuaScript.named('reentrant-acquire');
    const release = LuaScript.named('reentrant-release');
    const key = 'lock:{resent-release}';
    const keys = (requestId: string) => [key, `${key}:channel`, `${key}:rq:${requestId}`];
    const args = [10_000, 'owner-1', 10_000, 'publish', 'one'];
    await acquire.run(raw, [key], [10_000, 'owner-1', 'a1']);
    await acquire.run(raw, [key], [10_000, 'owner-1', 'a2']);
    expect(await release.run(raw, keys('x1'), args)).toBe(0);
    expect(await release.run(raw, keys('x1'), args)).toBe(0); // resend: not applied twice
    expect(await raw.hget(key, 'owner-1')).toBe('1');
    expect(await release.run(raw, keys('x2'), args)).toBe(1);
    expect(await release.run(raw, keys('x2'), args)).toBe(1); // resend after the key is gone
    expect(await release.run(raw, keys('x3'), args)).toBeNull(); // a genuinely new release
    expect(await raw.exists(key)).toBe(0);
  });

  it('recovers from a flushed script cache (NOSCRIPT)', async () => {
    const locks = app.get(LockService);
    await locks.run('before-flush', async () => undefined);
    await redis.client().script('FLUSH');
    expect(await locks.run('after-flush', async () => 'ran')).toBe('ran');
    expect(await locks.getLock('after-flush').isLocked()).toBe(false);
  });
});
