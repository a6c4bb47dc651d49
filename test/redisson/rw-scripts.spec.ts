import type Redis from 'ioredis';
import { LuaScript } from '../../lib/redis/lua-script';
import { RedissonNames, writerField } from '../../lib/layouts/redisson-names';
import { waitUntil } from '../support/lock-app';
import { ENGINES, type ContractEngine, type EngineHandle } from '../support/lock-contract';

/**
 * The read-write lock's scripts in layout 'redisson', against Redisson's read-write effects
 * (shared/redisson-layout.md §5, cited RL §n): keys, fields, TTLs and messages, plus what ours add
 * (kind guard, upgrade refusal, surplus form, extend-only renewal). On a real Redis and on the
 * testing kit, which runs the same Lua.
 */
const readAcquire = LuaScript.named('redisson-read-acquire');
const writeAcquire = LuaScript.named('redisson-write-acquire');
const readUnlock = LuaScript.named('redisson-read-unlock');
const writeUnlock = LuaScript.named('redisson-write-unlock');
const readRenew = LuaScript.named('redisson-read-renew');
const forceUnlock = LuaScript.named('redisson-rw-force-unlock');
const readIsLocked = LuaScript.named('redisson-read-is-locked');

const A = '3f2a0f4e-6a57-4c3e-9d7e-0a1b2c3d4e5f:1';
const B = '3f2a0f4e-6a57-4c3e-9d7e-0a1b2c3d4e5f:2';
const LATCH_PX = 10_000;

/**
 * Redisson's read unlock (RL §5.2, 3.44.0+) transcribed from the reference, not from our script:
 * what a Java reader leaving does to the hash (RL §10 checks 2 and 3).
 */
const JAVA_READ_UNLOCK = `
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then redis.call('publish', KEYS[2], '0'); return nil end
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end
local counter = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if counter == 0 then redis.call('hdel', KEYS[1], ARGV[1]) end
redis.call('del', KEYS[3] .. ':' .. (counter + 1))
if redis.call('hlen', KEYS[1]) > 1 then
  local maxRemainTime = -3
  local keys = redis.call('hkeys', KEYS[1])
  for n, key in ipairs(keys) do
    counter = tonumber(redis.call('hget', KEYS[1], key))
    if type(counter) == 'number' then
      for i = counter, 1, -1 do
        local remainTime = redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i)
        maxRemainTime = math.max(remainTime, maxRemainTime)
      end
    end
  end
  if maxRemainTime > 0 then redis.call('pexpire', KEYS[1], maxRemainTime); return 0 end
  if mode == 'write' then return 0 end
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], '0')
return 1`;

describe.each(ENGINES())('Redisson read-write lock scripts ($name)', (engine: ContractEngine) => {
  let server: EngineHandle;
  let raw: Redis;
  let latchNo = 0;
  beforeAll(async () => {
    server = await engine.start();
    raw = server.client();
  });
  afterAll(async () => {
    await server?.stop();
  });

  const names = (n: string) => ({
    channel: RedissonNames.readWriteChannel(n),
    prefixOf: (owner: string) => RedissonNames.readTimeoutPrefix(n, owner),
    keyPrefix: RedissonNames.readKeyPrefix(n),
  });
  const newLatch = (n: string): string => RedissonNames.unlockLatch(n, (++latchNo).toString(16).padStart(32, '0'));
  const read = (n: string, owner: string, leaseMs = 30_000) =>
    readAcquire.run(raw, [n, names(n).prefixOf(owner)], [leaseMs, owner, writerField(owner)]);
  const write = (n: string, owner: string, leaseMs = 30_000) => writeAcquire.run(raw, [n], [leaseMs, writerField(owner), owner]);
  const unlockRead = (n: string, owner: string, guard: number | '' = '', latch = newLatch(n)) =>
    readUnlock.run(raw, [n, names(n).channel, names(n).prefixOf(owner), names(n).keyPrefix, latch], [owner, 'PUBLISH', guard === '' ? LATCH_PX : 0, guard]);
  const unlockWrite = (n: string, owner: string, guard: number | '' = '', latch = newLatch(n)) =>
    writeUnlock.run(raw, [n, names(n).channel, latch], [writerField(owner), 'PUBLISH', guard === '' ? LATCH_PX : 0, guard]);
  const renewRead = (n: string, owner: string, leaseMs: number, extendOnly: boolean) =>
    readRenew.run(raw, [n, names(n).prefixOf(owner), names(n).keyPrefix], [leaseMs, owner, extendOnly ? '1' : '0']);
  const hash = (n: string) => raw.hgetall(n);

  /** Messages on `channel` from now on; `marker()` publishes a sentinel, so "nothing before it" is checkable. */
  async function listen(channel: string) {
    const subscriber = server.client();
    const messages: string[] = [];
    subscriber.on('message', (ch: string, message: string) => {
      if (ch === channel) messages.push(message);
    });
    await subscriber.subscribe(channel);
    return {
      messages,
      async upTo(count: number) {
        await waitUntil(() => messages.length >= count, 5_000);
        return messages.slice(0, count);
      },
      async marker() {
        await raw.publish(channel, 'marker');
      },
      close: () => subscriber.disconnect(),
    };
  }

  it('a first read hold: mode read, the owner counted, one timeout key, both with the lease (RL §5.1)', async () => {
    const n = 'rw-first-read';
    expect(await read(n, A, 5_000)).toEqual([1]);
    expect(await hash(n)).toEqual({ mode: 'read', [A]: '1' });
    const timeoutKey = `{${n}}:${A}:rwlock_timeout:1`;
    expect(await raw.get(timeoutKey)).toBe('1');
    for (const key of [n, timeoutKey]) {
      const ttl = await raw.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(5_000);
    }
  });

  it('readers share: re-entry adds a timeout key per hold and never shortens the hash (RL §5.1)', async () => {
    const n = 'rw-readers';
    expect(await read(n, A, 20_000)).toEqual([1]);
    expect(await read(n, B, 2_000)).toEqual([1]);
    expect(await raw.pttl(n)).toBeGreaterThan(10_000); // B's shorter lease did not shorten the hash
    expect(await read(n, A, 1_000)).toEqual([2]);
    expect(await hash(n)).toEqual({ mode: 'read', [A]: '2', [B]: '1' });
    const second = await raw.pttl(`{${n}}:${A}:rwlock_timeout:2`);
    expect(second).toBeGreaterThan(0);
    expect(second).toBeLessThanOrEqual(1_000);
    expect(await raw.pttl(n)).toBeGreaterThan(10_000);
  });

  it('a writer is refused while anyone reads, and writes nothing (RL §5.3)', async () => {
    const n = 'rw-writer-busy';
    await read(n, A);
    const before = await hash(n);
    const ttl = (await write(n, B)) as number;
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(30_000);
    expect(await hash(n)).toEqual(before);
  });

  it('a first write hold, re-entry adds a lease, readers of other owners are refused (RL §5.3, §10 check 5)', async () => {
    const n = 'rw-write';
    expect(await write(n, A, 5_000)).toEqual([1]);
    expect(await hash(n)).toEqual({ mode: 'write', [writerField(A)]: '1' });
    expect(await raw.pttl(n)).toBeLessThanOrEqual(5_000);
    expect(await write(n, A, 5_000)).toEqual([2]);
    expect(await raw.pttl(n)).toBeGreaterThan(5_000); // what was left plus a lease
    const busy = (await read(n, B)) as number;
    expect(busy).toBeGreaterThan(5_000);
    expect(Number(await write(n, B))).toBeGreaterThan(5_000);
    expect(await raw.exists(`{${n}}:${B}:rwlock_timeout:1`)).toBe(0);
    expect(await hash(n)).toEqual({ mode: 'write', [writerField(A)]: '2' });
  });

  it('a read inside the owner\'s write is granted (a downgrade keeps it); an upgrade is refused with -3 and writes nothing', async () => {
    const n = 'rw-up-down';
    await write(n, A);
    expect(await read(n, A)).toEqual([1]);
    expect(await hash(n)).toEqual({ mode: 'write', [writerField(A)]: '1', [A]: '1' });

    const m = 'rw-upgrade';
    await read(m, A);
    await read(m, B);
    const before = await hash(m);
    expect(await write(m, A)).toBe(-3);
    expect(await hash(m)).toEqual(before);
    expect(Number(await write(m, 'someone-else:9'))).toBeGreaterThan(0); // a mere reader's neighbour waits
  });

  it('a plain lock of the same name (a hash without mode) turns both acquires into "busy" and nothing is written', async () => {
    const n = 'rw-kind-clash';
    await raw.hset(n, A, '1');
    await raw.pexpire(n, 8_000);
    expect(await read(n, B)).toBe(-4);
    expect(await write(n, B)).toBe(-4);
    expect(await hash(n)).toEqual({ [A]: '1' });
    expect(await raw.exists(`{${n}}:${B}:rwlock_timeout:1`)).toBe(0);
  });

  it('a partial write release leaves the TTL as it is; the last one deletes the hash and publishes 1 (RL §5.4)', async () => {
    const n = 'rw-write-unlock';
    const channel = await listen(names(n).channel);
    await write(n, A, 5_000);
    await write(n, A, 5_000);
    const ttl = await raw.pttl(n);
    expect(await unlockWrite(n, A)).toBe(0);
    expect(await raw.pttl(n)).toBeGreaterThan(ttl - 1_000); // not reset to a lease (Redisson would)
    expect(await raw.hget(n, writerField(A))).toBe('1');
    const latch = newLatch(n);
    expect(await unlockWrite(n, A, '', latch)).toBe(1);
    expect(await raw.exists(n)).toBe(0);
    expect(await raw.get(latch)).toBe('1');
    expect(await raw.pttl(latch)).toBeLessThanOrEqual(LATCH_PX);
    expect(await channel.upTo(1)).toEqual(['1']);
    // A resend of the same call replays its answer and touches nothing (another owner holds now).
    await write(n, B);
    expect(await unlockWrite(n, A, '', latch)).toBe(1);
    expect(await hash(n)).toEqual({ mode: 'write', [writerField(B)]: '1' });
    channel.close();
  });

  it('a write release by a non-writer answers nil; on a missing lock it publishes 1 as Redisson does (RL §5.4)', async () => {
    const n = 'rw-write-unlock-missing';
    const channel = await listen(names(n).channel);
    await read(n, A);
    expect(await unlockWrite(n, A)).toBeNull(); // read mode
    await write('rw-other', B);
    expect(await unlockWrite('rw-other', A)).toBeNull(); // another writer
    await raw.del(n);
    expect(await unlockWrite(n, A)).toBeNull();
    expect(await channel.upTo(1)).toEqual(['1']);
    channel.close();
  });

  it('the last write hold of an owner that also reads: mode read, its reads kept, nothing published (RL §5.4)', async () => {
    const n = 'rw-downgrade';
    const channel = await listen(names(n).channel);
    await write(n, A);
    await read(n, A);
    expect(await unlockWrite(n, A)).toBe(1);
    expect(await hash(n)).toEqual({ mode: 'read', [A]: '1' });
    expect(await read(n, B)).toEqual([1]); // readers share it now
    await channel.marker();
    expect(await channel.upTo(1)).toEqual(['marker']);
    channel.close();
  });

  it('a partial read release drops its timeout key and sets the hash to the longest reader\'s TTL (RL §5.2)', async () => {
    const n = 'rw-read-partial';
    await read(n, A, 20_000);
    await read(n, A, 20_000);
    await read(n, B, 3_000);
    await raw.pexpire(n, 60_000);
    expect(await unlockRead(n, A)).toBe(0);
    expect(await raw.exists(`{${n}}:${A}:rwlock_timeout:2`)).toBe(0);
    expect(await raw.exists(`{${n}}:${A}:rwlock_timeout:1`)).toBe(1);
    const ttl = await raw.pttl(n);
    expect(ttl).toBeGreaterThan(3_000); // A's key 1, not B's shorter one
    expect(ttl).toBeLessThanOrEqual(20_000);
    expect(await unlockRead(n, A)).toBe(0); // A's last: B remains
    expect(await hash(n)).toEqual({ mode: 'read', [B]: '1' });
    expect(await raw.pttl(n)).toBeLessThanOrEqual(3_000); // now B's
  });

  it('the last reader deletes the hash and publishes 0; a resend replays; a non-reader gets nil (RL §5.2)', async () => {
    const n = 'rw-read-last';
    const channel = await listen(names(n).channel);
    await read(n, A);
    expect(await unlockRead(n, B)).toBeNull();
    const latch = newLatch(n);
    expect(await unlockRead(n, A, '', latch)).toBe(1);
    expect(await raw.exists(n)).toBe(0);
    expect(await raw.exists(`{${n}}:${A}:rwlock_timeout:1`)).toBe(0);
    expect(await channel.upTo(1)).toEqual(['0']);
    await read(n, B);
    expect(await unlockRead(n, A, '', latch)).toBe(1); // replayed, B's hold untouched
    expect(await hash(n)).toEqual({ mode: 'read', [B]: '1' });
    channel.close();
  });

  it('a downgraded writer\'s last read release keeps the write hold (RL §5.2: write mode stays)', async () => {
    const n = 'rw-read-in-write';
    await write(n, A);
    await read(n, A);
    await raw.del(`{${n}}:${A}:rwlock_timeout:1`); // no reader's key alive: only the write mode keeps it
    expect(await unlockRead(n, A)).toBe(0);
    expect(await hash(n)).toEqual({ mode: 'write', [writerField(A)]: '1' });
  });

  it('RL §10 check 2: a reader without timeout keys is deleted by a Java read unlock', async () => {
    const n = 'rw-naive-reader';
    await read(n, A); // the Java reader, through the same effect
    await raw.hincrby(n, B, 1); // a "naive" reader: a count and no key
    expect(await raw.eval(JAVA_READ_UNLOCK, 4, n, names(n).channel, names(n).prefixOf(A), names(n).keyPrefix, A)).toBe(1);
    expect(await raw.exists(n)).toBe(0);
  });

  it('RL §10 check 3: our reader survives a Java read unlock while its timeout key lives, with its TTL', async () => {
    for (const n of ['rw-our-reader', 'orders:{42}']) {
      await read(n, A); // the Java reader
      expect(await read(n, B, 15_000)).toEqual([1]); // ours
      expect(await raw.eval(JAVA_READ_UNLOCK, 4, n, names(n).channel, names(n).prefixOf(A), names(n).keyPrefix, A)).toBe(0);
      expect(await hash(n)).toEqual({ mode: 'read', [B]: '1' });
      const ttl = await raw.pttl(n);
      expect(ttl).toBeGreaterThan(10_000);
      expect(ttl).toBeLessThanOrEqual(15_000);
      // ... and only while it lives: once our key is gone, the next Java unlock takes the hash.
      await read(n, A);
      await raw.del(`${names(n).prefixOf(B)}:1`);
      expect(await raw.eval(JAVA_READ_UNLOCK, 4, n, names(n).channel, names(n).prefixOf(A), names(n).keyPrefix, A)).toBe(1);
      expect(await raw.exists(n)).toBe(0);
    }
  });

  it('the surplus form (no latch) brings a count down to the guard in one call, and writes nothing when not above it', async () => {
    const n = 'rw-surplus-read';
    const channel = await listen(names(n).channel);
    for (let i = 0; i < 3; i++) await read(n, A);
    const latch = newLatch(n);
    expect(await unlockRead(n, A, 1, latch)).toBe(0);
    expect(await raw.exists(latch)).toBe(0);
    expect(await raw.hget(n, A)).toBe('1');
    expect(await raw.exists(`{${n}}:${A}:rwlock_timeout:3`, `{${n}}:${A}:rwlock_timeout:2`)).toBe(0);
    expect(await raw.exists(`{${n}}:${A}:rwlock_timeout:1`)).toBe(1);
    const untouched = newLatch(n);
    expect(await unlockRead(n, A, 1, untouched)).toBe(-1);
    expect(await unlockRead(n, B, 0, untouched)).toBe(-1); // not a reader at all
    expect(await raw.exists(untouched)).toBe(0);
    expect(await raw.hget(n, A)).toBe('1');
    expect(await unlockRead(n, A, 0)).toBe(1);
    expect(await raw.exists(n)).toBe(0);
    expect(await channel.upTo(1)).toEqual(['0']);

    const m = 'rw-surplus-write';
    for (let i = 0; i < 3; i++) await write(m, A);
    expect(await unlockWrite(m, A, 1)).toBe(0);
    expect(await raw.hget(m, writerField(A))).toBe('1');
    expect(await unlockWrite(m, A, 1)).toBe(-1);
    expect(await unlockWrite(m, B, 0)).toBe(-1);
    expect(await unlockWrite(m, A, 0)).toBe(1);
    expect(await raw.exists(m)).toBe(0);
    expect(await unlockWrite(m, A, 0)).toBe(-1); // gone: no publish, no latch
    channel.close();
  });

  it('renewal re-arms the owner\'s timeout keys and the hash, extend-only; 0 when the hold is gone (RL §5.6)', async () => {
    const n = 'rw-renew';
    await read(n, A, 30_000);
    await read(n, A, 30_000);
    await raw.pexpire(`{${n}}:${A}:rwlock_timeout:1`, 200);
    await raw.pexpire(`{${n}}:${A}:rwlock_timeout:2`, 60_000);
    await raw.pexpire(n, 200);
    expect(await renewRead(n, A, 5_000, true)).toBe(1);
    const first = await raw.pttl(`{${n}}:${A}:rwlock_timeout:1`);
    expect(first).toBeGreaterThan(4_000);
    expect(first).toBeLessThanOrEqual(5_000);
    expect(await raw.pttl(`{${n}}:${A}:rwlock_timeout:2`)).toBeGreaterThan(50_000); // not shortened
    expect(await raw.pttl(n)).toBeGreaterThan(4_000);
    expect(await renewRead(n, B, 5_000, true)).toBe(0);
    await raw.del(`{${n}}:${A}:rwlock_timeout:1`, `{${n}}:${A}:rwlock_timeout:2`);
    expect(await renewRead(n, A, 5_000, true)).toBe(0); // keys gone: a Java unlock would take it
    expect(await raw.exists(`{${n}}:${A}:rwlock_timeout:1`)).toBe(0);
  });

  it('exact renewal (minHoldTime) sets the owner\'s keys and the hash exactly, but never below another reader', async () => {
    const n = 'rw-renew-exact';
    await read(n, A, 30_000);
    expect(await renewRead(n, A, 1_500, false)).toBe(1);
    expect(await raw.pttl(n)).toBeLessThanOrEqual(1_500);
    expect(await raw.pttl(`{${n}}:${A}:rwlock_timeout:1`)).toBeLessThanOrEqual(1_500);
    await read(n, B, 20_000);
    expect(await renewRead(n, A, 1_500, false)).toBe(1);
    expect(await raw.pttl(n)).toBeGreaterThan(15_000); // B's key keeps the hash
    expect(await raw.pttl(`{${n}}:${A}:rwlock_timeout:1`)).toBeLessThanOrEqual(1_500);
  });

  it('force unlocks delete only the named mode and wake with its message; read isLocked (RL §5.5)', async () => {
    const n = 'rw-force';
    const channel = await listen(names(n).channel);
    await read(n, A);
    expect(await readIsLocked.run(raw, [n], [])).toBe(1);
    expect(await forceUnlock.run(raw, [n, names(n).channel], ['write', 'PUBLISH'])).toBe(0);
    expect(await forceUnlock.run(raw, [n, names(n).channel], ['read', 'PUBLISH'])).toBe(1);
    expect(await raw.exists(n)).toBe(0);
    await write(n, A);
    expect(await readIsLocked.run(raw, [n], [])).toBe(0);
    await read(n, A);
    expect(await readIsLocked.run(raw, [n], [])).toBe(1); // a reader beside the writer
    expect(await forceUnlock.run(raw, [n, names(n).channel], ['read', 'PUBLISH'])).toBe(0);
    expect(await forceUnlock.run(raw, [n, names(n).channel], ['write', 'PUBLISH'])).toBe(1);
    expect(await channel.upTo(2)).toEqual(['0', '1']);
    channel.close();
  });
});
