import type Redis from 'ioredis';
import { LuaScript } from '../../lib/redis/lua-script';
import { RedissonNames } from '../../lib/layouts/redisson-names';
import { startRedis, type TestRedis } from '../support/redis-server';
import { waitUntil } from '../support/lock-app';

/**
 * The Redisson-layout semaphore scripts against RPermitExpirableSemaphore's effects
 * (shared/redisson-layout.md §6.2) on a real redis-server: the counter `N`, the lease zset
 * `{N}:timeout` keyed by 16 raw bytes, and the count published on `redisson_sc:{N}`.
 */
const acquire = LuaScript.named('redisson-pes-acquire');
const release = LuaScript.named('redisson-pes-release');
const renew = LuaScript.named('redisson-pes-renew');
const read = LuaScript.named('redisson-pes-read');

const NEVER = '922337203685477';
const keysOf = (n: string) => ({ n, timeout: RedissonNames.semaphoreTimeouts(n), channel: RedissonNames.semaphoreChannel(n), marker: RedissonNames.permitMarker(n) });
/** A 16-byte id; `fill` makes bytes above 0x7f, which a UTF-8 round trip would mangle. */
const id = (seed: number, fill = 0xf0): Buffer => Buffer.from(Array.from({ length: 16 }, (_, i) => (i === 0 ? seed : (fill + i) & 0xff)));

describe('Redisson-layout semaphore scripts (RPermitExpirableSemaphore)', () => {
  let redis: TestRedis;
  let raw: Redis;
  let listener: Redis;
  const messages: Array<[string, string]> = [];
  let names = 0;
  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    listener = redis.client();
    listener.on('pmessage', (_pattern: string, channel: string, message: string) => messages.push([channel, message]));
    await listener.psubscribe('redisson_sc:*');
  });
  afterAll(async () => {
    await redis?.stop();
  });
  beforeEach(() => {
    messages.length = 0;
  });
  const fresh = () => keysOf(`pes-${++names}`);

  const take = (k: ReturnType<typeof keysOf>, ids: Buffer[], { limit = 3, leaseMs = 30_000, now = Date.now() } = {}) =>
    acquire.run(raw, [k.n, k.timeout, k.channel, k.marker], [ids.length, now + leaseMs, now, NEVER, 'PUBLISH', limit, ...ids]);
  const giveBack = (k: ReturnType<typeof keysOf>, ids: Buffer[], now = Date.now()) => release.run(raw, [k.n, k.channel, k.timeout], [now, 'PUBLISH', ...ids]);
  const extend = (k: ReturnType<typeof keysOf>, ids: Buffer[], deadline: number, exact = false, now = Date.now()) =>
    renew.run(raw, [k.n, k.timeout, k.channel], [deadline, now, 'PUBLISH', exact ? 1 : 0, ...ids]);
  const leased = async (k: ReturnType<typeof keysOf>) => {
    const flat = await raw.zrangeBuffer(k.timeout, 0, -1, 'WITHSCORES');
    const out: Array<[string, number]> = [];
    for (let i = 0; i < flat.length; i += 2) out.push([flat[i].toString('hex'), Number(flat[i + 1].toString())]);
    return out;
  };
  const published = async (k: ReturnType<typeof keysOf>, count: number) => {
    await waitUntil(() => messages.filter(([channel]) => channel === k.channel).length >= count);
    return messages.filter(([channel]) => channel === k.channel).map(([, message]) => message);
  };

  it('first use sets the counter to the limit and publishes it (trySetPermits), then grants with raw 16-byte ids', async () => {
    const k = fresh();
    const a = id(1);
    const deadline = Date.now() + 30_000;
    expect(await acquire.run(raw, [k.n, k.timeout, k.channel, k.marker], [1, deadline, Date.now(), NEVER, 'PUBLISH', 3, a])).toBe('OK');
    expect(await raw.get(k.n)).toBe('2');
    expect(await raw.type(k.n)).toBe('string');
    expect(await leased(k)).toEqual([[a.toString('hex'), deadline]]);
    expect((await raw.zrangeBuffer(k.timeout, 0, -1))[0]).toHaveLength(16);
    expect(await published(k, 1)).toEqual(['3']);
    expect(await raw.pttl(k.n)).toBe(-1);
    expect(await raw.pttl(k.timeout)).toBe(-1);
  });

  it('a resent acquire whose ids are leased answers OK and takes nothing more', async () => {
    const k = fresh();
    const ids = [id(1), id(2)];
    expect(await take(k, ids)).toBe('OK');
    expect(await take(k, ids)).toBe('OK');
    expect(await raw.get(k.n)).toBe('1');
    expect(await raw.zcard(k.timeout)).toBe(2);
  });

  it('busy: the nearest deadline as ":<ms>", nil when every lease is "never"; no write', async () => {
    const k = fresh();
    const now = Date.now();
    expect(await take(k, [id(1), id(2)], { leaseMs: 60_000, now })).toBe('OK');
    expect(await take(k, [id(3)], { leaseMs: 20_000, now })).toBe('OK');
    expect(await take(k, [id(4)], { now })).toBe(`:${now + 20_000}`);
    expect(await raw.get(k.n)).toBe('0');

    const never = fresh();
    await raw.set(never.n, '0');
    await raw.zadd(never.timeout, NEVER, id(9));
    expect(await take(never, [id(4)], { limit: 1 })).toBeNull();
  });

  it('more permits than the caller\'s limit: {"limit", total} and no write; fewer (RSemaphore holders) is allowed', async () => {
    const k = fresh();
    expect(await take(k, [id(1)], { limit: 3 })).toBe('OK');
    expect(await take(k, [id(2)], { limit: 2 })).toEqual(['limit', 3]);
    expect(await raw.get(k.n)).toBe('2');
    expect(await raw.zcard(k.timeout)).toBe(1);
    // A Java RSemaphore took one: available 1 + leased 1 = 2 < 3.
    await raw.decrby(k.n, 1);
    expect(await take(k, [id(3)], { limit: 3 })).toBe('OK');
    expect(await raw.get(k.n)).toBe('0');
  });

  it('acquire reclaims at most n expired ids, publishing the count they bring back, then grants', async () => {
    const k = fresh();
    const past = Date.now() - 10_000;
    await raw.set(k.n, '0');
    await raw.zadd(k.timeout, past, id(1), past + 1, id(2), past + 2, id(3));
    expect(await take(k, [id(4)])).toBe('OK');
    expect(await published(k, 1)).toEqual(['1']);
    expect((await leased(k)).map(([hex]) => hex)).toEqual([id(2), id(3), id(4)].map((b) => b.toString('hex')));
    expect(await raw.get(k.n)).toBe('0');
  });

  it('release of one id: 1 and the new count published; 0 when past its deadline (given back all the same); -1 when not leased', async () => {
    const k = fresh();
    const a = id(1);
    const b = id(2);
    expect(await take(k, [a])).toBe('OK');
    expect(await take(k, [b], { leaseMs: 1_000 })).toBe('OK');
    expect(await giveBack(k, [a])).toBe(1);
    expect(await raw.get(k.n)).toBe('2');
    expect(await giveBack(k, [b], Date.now() + 5_000)).toBe(0);
    expect(await raw.get(k.n)).toBe('3');
    expect(await giveBack(k, [a])).toBe(-1);
    expect(await raw.get(k.n)).toBe('3');
    expect(await published(k, 3)).toEqual(['3', '2', '3']);
  });

  it('release of several ids: the removed count, published as is; the whole batch refused when one is missing', async () => {
    const k = fresh();
    const ids = [id(1), id(2)];
    expect(await take(k, ids)).toBe('OK');
    expect(await giveBack(k, [...ids, id(3)])).toBe(0);
    expect(await raw.zcard(k.timeout)).toBe(2);
    expect(await giveBack(k, ids)).toBe(2);
    expect(await raw.get(k.n)).toBe('3');
    expect(await raw.zcard(k.timeout)).toBe(0);
    expect(await published(k, 2)).toEqual(['3', '2']);
    expect(await giveBack(k, ids)).toBe(0);
  });

  it('renew: moves every deadline later, never earlier unless exact; 0 once the lease passed (reclaimed)', async () => {
    const k = fresh();
    const now = Date.now();
    const ids = [id(1), id(2)];
    expect(await take(k, ids, { now, leaseMs: 10_000 })).toBe('OK');
    expect(await extend(k, ids, now + 20_000)).toBe(1);
    expect((await leased(k)).map(([, score]) => score)).toEqual([now + 20_000, now + 20_000]);
    expect(await extend(k, ids, now + 5_000)).toBe(1);
    expect((await leased(k)).map(([, score]) => score)).toEqual([now + 20_000, now + 20_000]);
    expect(await extend(k, ids, now + 5_000, true)).toBe(1);
    expect((await leased(k)).map(([, score]) => score)).toEqual([now + 5_000, now + 5_000]);
    expect(await extend(k, ids, now + 60_000, false, now + 6_000)).toBe(0);
    expect(await raw.zcard(k.timeout)).toBe(0);
    expect(await raw.get(k.n)).toBe('3');
  });

  it('read: available (expired leases counted), live leases, hex ids with deadlines, server time; writes nothing', async () => {
    const k = fresh();
    const now = Date.now();
    expect(await read.run(raw, [k.n, k.timeout], [now])).toEqual([null, 0, [], expect.any(Number)]);
    expect(await take(k, [id(1)], { now, leaseMs: 1_000 })).toBe('OK');
    expect(await take(k, [id(2, 0x80)], { now, leaseMs: 60_000 })).toBe('OK');
    const [available, live, holders, serverTime] = (await read.run(raw, [k.n, k.timeout], [now + 2_000])) as [number, number, string[], number];
    expect([available, live]).toEqual([2, 1]);
    expect(holders).toEqual([id(1).toString('hex'), String(now + 1_000), id(2, 0x80).toString('hex'), String(now + 60_000)]);
    expect(Math.abs(serverTime - Date.now())).toBeLessThan(5_000);
    expect(await raw.get(k.n)).toBe('1');
    expect(await raw.zcard(k.timeout)).toBe(2);
  });

  it('SPUBLISH when asked (Redisson in cluster mode with sharded pub/sub)', async () => {
    const k = fresh();
    const sharded = redis.client();
    const got: string[] = [];
    sharded.on('smessage', (_channel: string, message: string) => got.push(message));
    await sharded.ssubscribe(k.channel);
    expect(await acquire.run(raw, [k.n, k.timeout, k.channel, k.marker], [1, Date.now() + 1_000, Date.now(), NEVER, 'SPUBLISH', 2, id(1)])).toBe('OK');
    expect(await release.run(raw, [k.n, k.channel, k.timeout], [Date.now(), 'SPUBLISH', id(1)])).toBe(1);
    await waitUntil(() => got.length >= 2);
    expect(got).toEqual(['2', '2']);
    expect(messages.filter(([channel]) => channel === k.channel)).toEqual([]);
    sharded.disconnect();
  });
});
