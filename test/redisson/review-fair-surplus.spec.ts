import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService } from '../../lib';
import { LockEngine } from '../../lib/engine/lock-engine';
import { LuaScript } from '../../lib/redis/lua-script';
import { createLockApp, waitUntil } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * Review (issue 33): the fair lock's surplus form (`takeBackSurplus`, latch TTL 0) runs
 * `redisson-fair-unlock`, which writes `SET latch v PX 0` unconditionally: Redis refuses a PX of 0
 * ("invalid expire time"), after the script already did `HINCRBY`/`DEL N`. When the take-back frees
 * the lock, the error comes before `redisson-fair-wake-head`: nobody is woken. The queue's next head
 * (Node or Java) sleeps to the TTL it was last told, which for a waiter behind another is that
 * waiter's deadline: up to `wait` (300 s by default).
 */
describe("review: layout 'redisson' fair lock, a grant given back wakes nobody", () => {
  let redis: TestRedis;
  let holder: TestingModule;
  let cancelled: TestingModule;
  let behind: TestingModule;
  let raw: Redis;
  const fair = (m: TestingModule) => m.get(FairLockService);

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    holder = await createLockApp({ redis: redis.url, layout: 'redisson', watchdogTimeout: 30_000 });
    cancelled = await createLockApp({ redis: redis.url, layout: 'redisson', watchdogTimeout: 30_000 });
    behind = await createLockApp({ redis: redis.url, layout: 'redisson', watchdogTimeout: 30_000 });
  });
  afterAll(async () => {
    await holder?.close();
    await cancelled?.close();
    await behind?.close();
    await redis?.stop();
  });

  it('the surplus form of redisson-fair-unlock releases and wakes the head (script level)', async () => {
    const name = 'review:fair:script';
    const owner = '0f0f0f0f-0000-4000-8000-000000000000:1';
    const head = 'c0ffee00-0000-4000-8000-000000000000:77';
    await raw.hset(name, owner, 1);
    await raw.pexpire(name, 30_000);
    await raw.rpush(`redisson_lock_queue:{${name}}`, head);
    await raw.zadd(`redisson_lock_timeout:{${name}}`, Date.now() + 300_000, head);
    const listener = redis.client();
    const heard: string[] = [];
    listener.on('message', (channel: string, message: string) => heard.push(`${channel} ${message}`));
    await listener.subscribe(`redisson_lock__channel:{${name}}:${head}`);
    const unlock = LuaScript.named('redisson-fair-unlock');
    const keys = [name, `redisson_lock_queue:{${name}}`, `redisson_lock_timeout:{${name}}`, `redisson_lock__channel:{${name}}`, `redisson_unlock_latch:{${name}}:${'0'.repeat(32)}`];
    // guard 0: take back every count (a grant nobody uses).
    const outcome = await unlock.run(raw, keys, [owner, Date.now(), 'PUBLISH', 0, '0']).then(
      (reply) => reply,
      (error: Error) => error.message,
    );
    expect(await raw.exists(name)).toBe(0);
    await waitUntil(() => heard.length > 0, 2_000).catch(() => undefined);
    expect({ outcome, heard }).toEqual({ outcome: 1, heard: [`redisson_lock__channel:{${name}}:${head} 0`] });
    listener.disconnect();
  });

  it('a queued waiter cancelled while its granting attempt is out: the next waiter is woken at once', async () => {
    const name = 'review:fair:cancel';
    const held = fair(holder).getLock(name);
    await held.lock();
    // The head waiter, to be cancelled right after its granting attempt is written.
    const controller = new AbortController();
    const first = fair(cancelled).getLock(name).tryLock({ waitTime: 20_000, signal: controller.signal }).catch((e: Error) => e);
    await waitUntil(async () => (await raw.llen(`redisson_lock_queue:{${name}}`)) === 1);
    // A waiter queued behind it, with a short wait of its own.
    const secondLock = fair(behind).getLock(name);
    const second = secondLock.tryLock({ waitTime: 4_000 });
    await waitUntil(async () => (await raw.llen(`redisson_lock_queue:{${name}}`)) === 2);
    await waitUntil(() => cancelled.get(LockEngine).subscriber.sleepingCount() > 0);
    // Abort the first waiter as soon as its next attempt is on the wire (it will be granted).
    const client = cancelled.get(LockEngine).client as unknown as Redis;
    const acquireSha = LuaScript.named('redisson-fair-acquire').sha;
    const original = client.evalsha;
    client.evalsha = function (this: Redis, ...args: unknown[]) {
      const result = (original as (...a: unknown[]) => unknown).apply(this, args);
      if (args[0] === acquireSha) {
        client.evalsha = original;
        controller.abort(new Error('caller gave up'));
      }
      return result;
    } as typeof client.evalsha;
    const releasedAt = Date.now();
    await held.unlock();
    expect(await first).toBeInstanceOf(Error);
    // The grant was given back: the lock is free, and the waiter behind must get it well within its wait.
    expect(await second).toBe(true);
    expect(Date.now() - releasedAt).toBeLessThan(2_000);
    await secondLock.unlock();
  });
});
