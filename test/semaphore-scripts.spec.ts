import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LuaScript } from '../lib/redis/lua-script';
import { waitUntil } from './support/lock-app';
import { ENGINES, type ContractEngine, type EngineHandle } from './support/lock-contract';

/**
 * Script-level guarantees of the semaphore's hand-off: freed permits are granted inside the script
 * to the waiters in line (in order, on a short lease, one `granted:` message each), a resent attempt
 * of a granted waiter confirms its full lease, a waiter giving up passes its grant on, and a waiter
 * of an older version is only woken. On Redis, and on the testing kit's server (same scripts).
 */
const acquire = LuaScript.named('semaphore-acquire');
const release = LuaScript.named('semaphore-release');

const WAITER_TIMEOUT = 5_000;
const keysOf = (name: string) => {
  const base = `lock:sem:{${name}}`;
  return { base, leases: `${base}:leases`, line: `${base}:line`, deadlines: `${base}:deadlines`, fence: `${base}:fence`, channel: `${base}:channel` };
};

describe.each(ENGINES())('semaphore hand-off scripts ($name)', (engine: ContractEngine) => {
  let redis: EngineHandle;
  let app: TestingModule;
  let raw: Redis;
  let listener: Redis;
  const messages: string[] = [];
  beforeAll(async () => {
    redis = await engine.start();
    // The kit's server exists once an app addressed it.
    app = await redis.createApp({ redis: redis.url });
    raw = redis.client();
    listener = redis.client();
    listener.on('message', (_channel: string, message: string) => messages.push(message));
  });
  afterAll(async () => {
    listener?.disconnect();
    raw?.disconnect();
    await app?.close();
    await redis?.stop();
  });

  /** One attempt of `id` (joining the line when `join`); the reply as the script gives it. */
  const attempt = (name: string, id: string, take: number, leaseMs: number, join = true, permits = 2, waiterTimeout = WAITER_TIMEOUT) => {
    const k = keysOf(name);
    return acquire.run(raw, [k.base, k.leases, k.line, k.deadlines, k.fence, k.channel], [permits, take, leaseMs, id, waiterTimeout, join ? 1 : 0, 'publish', 60_000]);
  };
  let records = 0;
  const giveBack = (name: string, id: string, leaving: boolean, waiterTimeout = WAITER_TIMEOUT) => {
    const k = keysOf(name);
    return release.run(raw, [k.base, k.leases, k.line, k.deadlines, k.channel, `${k.base}:rq:${id}:${++records}`, k.fence], [id, 'publish', 10_000, leaving ? 1 : 0, waiterTimeout, 60_000]);
  };
  const serverNow = async () => {
    const [seconds, micros] = await raw.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };
  /** Remaining lease of `id` in ms (server clock). */
  const leaseLeft = async (name: string, id: string) => Number(await raw.zscore(keysOf(name).leases, id)) - (await serverNow());
  // `granted:<id> <token> <attempt stamp or -> <ms since that attempt> <grant lease>`: [token, since, lease].
  const grantsFor = (id: string) =>
    messages
      .filter((m) => m.startsWith(`granted:${id} `))
      .map((m) => {
        const [token, , since, lease] = m.split(' ').slice(1);
        return [token, since, lease].map(Number);
      });
  // Grants go to each waiter's process's channel: the semaphore's channel plus the client part of
  // its permit id (these ids have none: the id itself). `ids:` wakes stay on the semaphore's channel.
  const WAITER_IDS = ['a', 'b', 'dead', 'h', 'new', 'next', 'old', 'w1', 'w2', 'w3'];
  const subscribe = (name: string) => {
    const { channel } = keysOf(name);
    return listener.subscribe(channel, ...WAITER_IDS.map((id) => `${channel}:${id}`));
  };

  it('lean path: permits of a holder whose lease ended go back when a caller needs them, not before', async () => {
    const name = 'lean-expired-holder';
    const k = keysOf(name);
    expect(await attempt(name, 'crashed', 2, 60_000, false, 3)).toEqual([expect.any(Number)]);
    await raw.zadd(k.leases, 1, 'crashed'); // its lease ended long ago (it crashed)
    // One permit is free without taking the crashed holder's back: granted on the lean path.
    expect(await attempt(name, 'first', 1, 60_000, false, 3)).toEqual([expect.any(Number)]);
    expect(await raw.hget(k.base, 'used')).toBe('3');
    expect(await raw.hget(k.base, 'o:crashed')).toBe('2');
    // The next caller needs them: the whole way takes them back, and grants it.
    expect(await attempt(name, 'second', 2, 60_000, false, 3)).toEqual([expect.any(Number)]);
    expect(await raw.hget(k.base, 'used')).toBe('3');
    expect(await raw.hget(k.base, 'o:crashed')).toBeNull();
    // A release after its lease ended gives the permits back all the same, and answers "not held".
    await raw.zadd(k.leases, 1, 'first');
    expect(await giveBack(name, 'first', false)).toBeNull();
    expect(await raw.hget(k.base, 'used')).toBe('2');
    expect(await giveBack(name, 'second', false)).toBe(1);
    expect(await raw.exists(k.base, k.leases)).toBe(0); // the last holder gone: nothing stays
  });

  it('lean path: a holder joining others keeps the longest lease on the keys; a release that leaves holders keeps the count', async () => {
    const name = 'lean-two-holders';
    const k = keysOf(name);
    await attempt(name, 'long', 1, 60_000, false, 3);
    await attempt(name, 'short', 1, 1_000, false, 3);
    expect(await raw.pttl(k.base)).toBeGreaterThan(30_000);
    expect(await raw.pttl(k.leases)).toBeGreaterThan(30_000);
    const releaseLong = () =>
      release.run(raw, [k.base, k.leases, k.line, k.deadlines, k.channel, `${k.base}:rq:long:once`, k.fence], ['long', 'publish', 10_000, 0, WAITER_TIMEOUT, 60_000]);
    expect(await releaseLong()).toBe(1);
    expect(await raw.hget(k.base, 'used')).toBe('1');
    expect(await raw.zscore(k.leases, 'long')).toBeNull();
    expect(await releaseLong()).toBe(1); // resent: its record answers
    expect(await raw.hget(k.base, 'used')).toBe('1');
    expect(await giveBack(name, 'short', false)).toBe(1);
    expect(await raw.exists(k.base, k.leases)).toBe(0);
  });

  it('a release grants the freed permits to the waiters at the head of the line, in order, on the short grant lease', async () => {
    const name = 'grant-order';
    await subscribe(name);
    expect(await attempt(name, 'h', 2, 10_000, false)).toEqual([expect.any(Number)]);
    expect(typeof (await attempt(name, 'w1', 1, 20_000))).toBe('number');
    expect(typeof (await attempt(name, 'w2', 2, 300))).toBe('number');
    expect(typeof (await attempt(name, 'w3', 1, 20_000))).toBe('number');
    expect(await giveBack(name, 'h', false)).toBe(1);
    // w1 fits in the 2 freed permits, w2 (2) does not fit in the 1 left: FIFO stops there.
    await waitUntil(() => grantsFor('w1').length === 1, 2_000);
    const [token, sinceAttempt, grantLease] = grantsFor('w1')[0];
    expect(grantLease).toBe(WAITER_TIMEOUT);
    expect(sinceAttempt).toBeGreaterThanOrEqual(0);
    expect(await raw.hget(keysOf(name).base, 'f:w1')).toBe(String(token));
    expect(await leaseLeft(name, 'w1')).toBeLessThanOrEqual(WAITER_TIMEOUT);
    expect(await raw.lrange(keysOf(name).line, 0, -1)).toEqual(['w2', 'w3']);
    const fields = Object.keys(await raw.hgetall(keysOf(name).base));
    expect(fields.filter((f) => f.endsWith(':w1') && !f.startsWith('o:') && !f.startsWith('f:'))).toEqual([]);
    // A resent attempt of the granted waiter (the message missed) answers its token and confirms
    // the full lease.
    expect(await attempt(name, 'w1', 1, 20_000)).toEqual([token]);
    expect(await leaseLeft(name, 'w1')).toBeGreaterThan(WAITER_TIMEOUT);
    // w1's release frees 2: w2 gets both, on its own (shorter) lease; w3 waits on.
    expect(await giveBack(name, 'w1', false)).toBe(1);
    await waitUntil(() => grantsFor('w2').length === 1, 2_000);
    expect(grantsFor('w2')[0][2]).toBe(300);
    expect(grantsFor('w2')[0][0]).toBeGreaterThan(token);
    expect(grantsFor('w3')).toEqual([]);
    expect(await raw.lrange(keysOf(name).line, 0, -1)).toEqual(['w3']);
    await giveBack(name, 'w2', false);
    await waitUntil(() => grantsFor('w3').length === 1, 2_000);
    await giveBack(name, 'w3', false);
    expect(await raw.exists(keysOf(name).line, keysOf(name).deadlines)).toBe(0);
  });

  it('a waiter giving up gives back what it was granted, and it goes on to the next in line', async () => {
    const name = 'grant-give-up';
    await subscribe(name);
    await attempt(name, 'h', 1, 10_000, false, 1);
    await attempt(name, 'a', 1, 10_000, true, 1);
    await attempt(name, 'b', 1, 10_000, true, 1);
    await giveBack(name, 'h', false);
    await waitUntil(() => grantsFor('a').length === 1, 2_000);
    expect(await giveBack(name, 'a', true)).toBe(1);
    await waitUntil(() => grantsFor('b').length === 1, 2_000);
    expect(await raw.hget(keysOf(name).base, 'o:b')).toBe('1');
    expect(await raw.hget(keysOf(name).base, 'o:a')).toBeNull();
    await giveBack(name, 'b', false);
  });

  it("a granted waiter that never confirms loses the permits when the grant lease ends; the next waiter's attempt takes them", async () => {
    const name = 'grant-dead';
    await subscribe(name);
    await attempt(name, 'h', 1, 10_000, false, 1, 100);
    await attempt(name, 'dead', 1, 10_000, true, 1, 100);
    await attempt(name, 'next', 1, 10_000, true, 1, 100);
    await giveBack(name, 'h', false, 100);
    await waitUntil(() => grantsFor('dead').length === 1, 2_000);
    expect(grantsFor('dead')[0][2]).toBe(100);
    // Still the dead one's while its grant lease runs...
    expect(typeof (await attempt(name, 'next', 1, 10_000, true, 1, 100))).toBe('number');
    await new Promise((r) => setTimeout(r, 150));
    // ...then the next waiter in line gets them (its heartbeats kept its place).
    expect(await attempt(name, 'next', 1, 10_000, true, 1, 100)).toEqual([expect.any(Number)]);
    // The dead one's late attempt is not told it holds them.
    expect(typeof (await attempt(name, 'dead', 1, 10_000, false, 1, 100))).toBe('number');
    await giveBack(name, 'next', false, 100);
  });

  it('a waiter of an older version (no lease stored with it) is only woken by name, and its permits wait for it', async () => {
    const name = 'grant-old';
    await subscribe(name);
    const k = keysOf(name);
    await attempt(name, 'h', 1, 10_000, false, 1);
    // What an older version's attempt stores: the line entry, its deadline and w:, no l: / s:.
    await raw.rpush(k.line, 'old');
    await raw.zadd(k.deadlines, (await serverNow()) + 10_000, 'old');
    await raw.hset(k.base, 'w:old', 1);
    await attempt(name, 'new', 1, 10_000, true, 1);
    await giveBack(name, 'h', false);
    await waitUntil(() => messages.includes('ids:old'), 2_000);
    expect(grantsFor('old')).toEqual([]);
    expect(grantsFor('new')).toEqual([]);
    // The older waiter's retry takes them; its release then grants the newer one.
    expect(await attempt(name, 'old', 1, 10_000, true, 1)).toEqual([expect.any(Number)]);
    await giveBack(name, 'old', false);
    await waitUntil(() => grantsFor('new').length === 1, 2_000);
    await giveBack(name, 'new', false);
  });
});
