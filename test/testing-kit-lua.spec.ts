import { createHash } from 'node:crypto';
import { InMemoryRedis } from '../lib/testing/in-memory-redis';
import { luaNumberArg } from '../lib/testing/lua-runner';
import { startRedis, type TestRedis } from './support/redis-server';

/**
 * The kit runs Redis's Lua 5.1 scripts on fengari's Lua 5.3: the edges behave as Redis's (the
 * library's scripts rely on them; test/reentrant-scripts.spec.ts runs those on both).
 */
describe('testing kit: Lua as Redis runs it', () => {
  const server = new InMemoryRedis();
  const evaluate = (source: string, keys: string[] = [], args: string[] = []) =>
    server.execute('eval', [source, String(keys.length), ...keys, ...args]);

  it('numbers are doubles: microsecond times and their arithmetic stay exact (5.3 on fengari would wrap at 32 bits)', () => {
    expect(evaluate("return { tonumber('1795462259') * 1000000 + tonumber('123456') }")).toEqual([1795462259123456]);
    expect(evaluate("return string.format('%.0f', tonumber('1795462259123456') + 1)")).toBe('1795462259123457');
  });

  it('a number handed to redis.call is written as Redis writes it: integers without a decimal point', () => {
    evaluate("redis.call('set', KEYS[1], tonumber('3') * 1.0) redis.call('set', KEYS[2], 1.5)", ['int', 'float']);
    expect(server.execute('get', ['int'])).toBe('3');
    expect(server.execute('get', ['float'])).toBe('1.5');
    expect(luaNumberArg(1795462259123456)).toBe('1795462259123456');
  });

  it('replies: numbers truncated, false is nil, true is 1, a table is an array up to its first nil', () => {
    expect(evaluate('return 3.99')).toBe(3);
    expect(evaluate('return false')).toBeNull();
    expect(evaluate('return true')).toBe(1);
    expect(evaluate("return { 1, 'two', false, 4 }")).toEqual([1, 'two', null, 4]);
    expect(evaluate("return { 1, nil, 3 }")).toEqual([1]);
  });

  it('redis.call replies reach the script as Redis converts them (nil as false, status as {ok=})', () => {
    expect(evaluate("return redis.call('get', 'missing') == false and 'nil is false' or 'other'")).toBe('nil is false');
    expect(evaluate("return redis.call('set', 'k', 'v').ok")).toBe('OK');
    expect(evaluate("local t = redis.call('time') return type(t[1]) .. type(t[2])")).toBe('stringstring');
  });

  it('errors: {err=} and a failing redis.call are error replies, redis.pcall returns them, unpack is 5.1\'s', () => {
    expect(() => evaluate("return { err = 'BUSY custom' }")).toThrow('BUSY custom');
    server.execute('set', ['text', 'x']);
    expect(() => evaluate("return redis.call('hget', 'text', 'f')")).toThrow(/WRONGTYPE/);
    expect(evaluate("return redis.pcall('hget', 'text', 'f').err")).toMatch(/^WRONGTYPE/);
    expect(() => evaluate('return nosuchfunction()')).toThrow(/^ERR /);
    expect(evaluate("return { unpack({ 'a', 'b' }) }")).toEqual(['a', 'b']);
  });

  it('numbers become strings as in 5.1: tostring and .. write an integral number without 5.3\'s ".0"', () => {
    expect(evaluate("return { tostring(tonumber('3')), 'w:' .. tonumber('7'), tostring(tonumber('5') - tonumber('2')), tostring(1.5), tostring(-2.0) }")).toEqual([
      '3',
      'w:7',
      '3',
      '1.5',
      '-2',
    ]);
    expect(evaluate("local t = redis.call('time') return tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))")).toMatch(/^\d{13}$/);
  });

  it("string.format's %d and %i take any number and truncate it, as 5.1's (5.3 on fengari wrote NaN past 32 bits)", () => {
    expect(evaluate("return { string.format('%d', tonumber('1700000000000')), string.format('%06d', tonumber('42')), string.format('%d|%i', 3.7, -3.7) }")).toEqual([
      '1700000000000',
      '000042',
      '3|-3',
    ]);
    expect(evaluate("return string.format('%s %% %.0f %d', 'a', 2.0, 9)")).toBe('a % 2 9');
  });

  it('HMGET answers each field in order, a missing one (or a missing key) as nil, and WRONGTYPE on another type', () => {
    server.execute('hset', ['rec', 'a', '1', 'b', '2']);
    expect(server.execute('hmget', ['rec', 'b', 'missing', 'a'])).toEqual(['2', null, '1']);
    expect(server.execute('hmget', ['no-such-hash', 'a', 'b'])).toEqual([null, null]);
    expect(evaluate("local r = redis.call('hmget', 'rec', 'a', 'missing') return { #r, tostring(r[2]) }")).toEqual([2, 'false']);
    server.execute('set', ['plain', 'x']);
    expect(() => server.execute('hmget', ['plain', 'a'])).toThrow(/^WRONGTYPE/);
  });

  it('PEXPIRE takes Redis 7\'s NX, XX, GT and LT; ZRANGE takes REV and refuses what the kit does not answer', () => {
    server.execute('hset', ['ttl', 'f', 'v']);
    expect(server.execute('pexpire', ['ttl', '5000', 'XX'])).toBe(0); // no expiry yet
    expect(server.execute('pexpire', ['ttl', '5000', 'GT'])).toBe(0); // none is infinite
    expect(server.execute('pexpire', ['ttl', '5000', 'NX'])).toBe(1);
    expect(server.execute('pexpire', ['ttl', '9000', 'NX'])).toBe(0);
    expect(server.execute('pexpire', ['ttl', '9000', 'LT'])).toBe(0);
    expect(server.execute('pexpire', ['ttl', '2000', 'lt'])).toBe(1);
    expect(server.execute('pttl', ['ttl'])).toBeLessThanOrEqual(2000);
    expect(() => server.execute('pexpire', ['ttl', '1', 'NX', 'GT'])).toThrow('not compatible');
    expect(() => server.execute('pexpire', ['ttl', '1', 'GT', 'LT'])).toThrow('not compatible');
    server.execute('zadd', ['ranks', '1', 'a', '2', 'b', '3', 'c']);
    expect(server.execute('zrange', ['ranks', '0', '1', 'REV', 'WITHSCORES'])).toEqual(['c', '3', 'b', '2']);
    expect(() => server.execute('zrange', ['ranks', '0', '1', 'BYSCORE'])).toThrow(/does not support BYSCORE/);
    expect(() => server.execute('zrange', ['ranks', '0', '1', 'bogus'])).toThrow(/syntax error/);
  });

  it('EVALSHA answers NOSCRIPT until the script was sent once with EVAL; SCRIPT FLUSH forgets it', () => {
    const source = "return 'cached'";
    const sha = createHash('sha1').update(source).digest('hex');
    expect(() => server.execute('evalsha', [sha, '0'])).toThrow(/^NOSCRIPT/);
    expect(evaluate(source)).toBe('cached');
    expect(server.execute('evalsha', [sha, '0'])).toBe('cached');
    server.execute('script', ['flush']);
    expect(() => server.execute('evalsha', [sha, '0'])).toThrow(/^NOSCRIPT/);
  });

  it('keys expire on the server clock, which fake timers move and a wall-clock step does not, checked when touched', () => {
    jest.useFakeTimers();
    try {
      server.execute('set', ['lease', 'x', 'px', '500']);
      expect(server.execute('pttl', ['lease'])).toBe(500);
      const wall = jest.spyOn(Date, 'now').mockReturnValue(Date.now() + 60_000);
      expect(server.execute('exists', ['lease'])).toBe(1);
      wall.mockRestore();
      jest.advanceTimersByTime(499);
      expect(server.execute('exists', ['lease'])).toBe(1);
      jest.advanceTimersByTime(1);
      expect(server.execute('exists', ['lease'])).toBe(0);
      expect(server.execute('pttl', ['lease'])).toBe(-2);
    } finally {
      jest.useRealTimers();
    }
  });
});

/**
 * The commands of the deadlock scripts (wait-for records beside a held lock, read with the lock's
 * hash, line and leases: HGETALL, HSET, HDEL, PEXPIRE, PTTL, LRANGE, ZSCORE, ZRANGE WITHSCORES,
 * HMGET, TIME), in one script shaped like them, answer the same on Redis 7 and in the kit; so does
 * the ZCOUNT the inspect scripts count a line's live waiters with.
 */
describe('testing kit: the deadlock scripts\' commands answer as on Redis', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  const script = `
    local held, waitfor, line, leases = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
    local out = {}
    local function put(v) out[#out + 1] = v end
    local t = redis.call('time')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    put(type(t[1]) .. ' ' .. type(t[2]) .. ' ' .. tostring(string.len(tostring(now))) .. ' ' .. tostring(string.find(now .. '', '.', 1, true)))
    put(string.format('%d', now) == tostring(now) and 'same' or 'differs')
    redis.call('hset', held, 'o1', 1)
    put(redis.call('hset', waitfor, 'o1 w1', 'lock:{b} reentrant e7 - 1 ' .. tonumber(ARGV[1]), 'o1 w2', 'lock:{c} read - r 1 ' .. tonumber(ARGV[1]) + 5))
    put(redis.call('hset', waitfor, 'o1 w1', 'again'))
    put(redis.call('hgetall', waitfor))
    local got = redis.call('hmget', waitfor, 'o1 w2', 'o9 w9', 'o1 w1')
    put({ got[1], tostring(got[2]), got[3] })
    put(redis.call('pttl', waitfor))
    put(redis.call('pexpire', waitfor, 3000))
    local ttl = redis.call('pttl', waitfor)
    put(ttl > 2900 and ttl <= 3000 and 'ttl ok' or tostring(ttl))
    put(redis.call('pexpire', waitfor, 9000, 'NX'))
    put(redis.call('pexpire', waitfor, 9000, 'GT'))
    put(redis.call('pexpire', waitfor, 1000, 'GT'))
    put(redis.call('pexpire', 'missing', 1000))
    put(redis.call('pttl', 'missing'))
    redis.call('rpush', line, 'e1', 'e2', 'e3')
    put(redis.call('lrange', line, 0, -1))
    put(redis.call('lrange', line, 1, 1))
    put(redis.call('lrange', line, -2, -1))
    put(#redis.call('lrange', line, 5, 10))
    put(#redis.call('lrange', 'missing', 0, -1))
    redis.call('zadd', leases, 1700000000000, 'o1', 2.5, 'o2')
    put(redis.call('zscore', leases, 'o1'))
    put(redis.call('zscore', leases, 'o2'))
    put(tostring(redis.call('zscore', leases, 'o9')))
    put(tostring(tonumber(redis.call('zscore', leases, 'o1'))) .. ' ' .. string.format('%d', tonumber(redis.call('zscore', leases, 'o1'))))
    put(redis.call('zrange', leases, 0, -1, 'withscores'))
    put(redis.call('zrange', leases, -1, -1, 'WITHSCORES'))
    put(redis.call('zrange', leases, 0, 0, 'rev', 'withscores'))
    put(redis.call('hdel', waitfor, 'o1 w1', 'o9 w9'))
    put(redis.call('hdel', waitfor, 'o1 w2'))
    put(redis.call('exists', waitfor))
    put(redis.call('hgetall', waitfor))
    put({ redis.call('zcount', leases, '(2.5', '+inf'), redis.call('zcount', leases, '-inf', 2.5), redis.call('zcount', leases, '(' .. string.format('%.0f', 1700000000000), '+inf') })
    put(redis.call('zcount', 'missing', '-inf', '+inf'))
    return out
  `;
  const keys = ['lock:{a}', 'lock:{a}:waitfor', 'lock:{a}:line', 'lock:{a}:leases'];

  it('one script over a wait-for record, a line and leases gives the same answer', async () => {
    const raw = redis.client();
    let onRedis: unknown;
    try {
      onRedis = await raw.eval(script, keys.length, ...keys, '1712345678901');
    } finally {
      raw.disconnect();
    }
    const inKit = new InMemoryRedis().execute('eval', [script, String(keys.length), ...keys, '1712345678901']);
    expect(inKit).toEqual(onRedis);
    expect((onRedis as unknown[])[0]).toBe('string string 13 nil');
    expect((onRedis as unknown[]).slice(-2)).toEqual([[1, 1, 0], 0]);
    expect((onRedis as unknown[])[4]).toEqual([
      'o1 w1',
      'again',
      'o1 w2',
      'lock:{c} read - r 1 1712345678906',
    ]);
  });
});

describe('testing kit: PUBSUB NUMSUB and SHARDNUMSUB (the line judges dead waiters by them)', () => {
  it('count each channel\'s connected subscribers, from a script as from a client, pub/sub and sharded apart', () => {
    const server = new InMemoryRedis();
    const listening = { deliver: () => undefined, connected: true };
    const down = { deliver: () => undefined, connected: false };
    server.subscribe(listening, 'ch', false);
    server.subscribe(down, 'ch', false);
    server.subscribe(listening, 'shard', true);
    const script = "return { redis.call('pubsub', 'numsub', 'ch', 'shard', 'none'), redis.call('pubsub', 'shardnumsub', 'shard', 'ch') }";
    expect(server.execute('eval', [script, '0'])).toEqual([
      ['ch', 1, 'shard', 0, 'none', 0],
      ['shard', 1, 'ch', 0],
    ]);
    server.unsubscribe(listening, 'ch', false);
    expect(server.execute('pubsub', ['NUMSUB', 'ch'])).toEqual(['ch', 0]);
    expect(() => server.execute('pubsub', ['channels'])).toThrow(/unknown subcommand/);
  });
});
