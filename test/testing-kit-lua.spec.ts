import { createHash } from 'node:crypto';
import { InMemoryRedis } from '../lib/testing/in-memory-redis';
import { luaNumberArg } from '../lib/testing/lua-runner';

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
