import { hasHashTag, LockKeys, nameSegment } from '../../lib/redis/lock-keys';

/** Key naming without Redis: every key of one lock shares a hash slot, so its scripts run on a cluster. */

/** CRC16-XMODEM, the checksum of Redis Cluster's key slots. */
function crc16(text: string): number {
  let crc = 0;
  for (const byte of Buffer.from(text, 'utf8')) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/**
 * The slot as redis-server computes it (keyHashSlot in cluster.c): the text between the first `{`
 * and the first `}` after it, unless that is empty or unclosed. Written out here because
 * cluster-key-slot reads some keys differently (`lock:{}{}`: it hashes the second tag, Redis the
 * whole key), and the server's reading is the one that decides CROSSSLOT.
 */
function redisSlot(key: string): number {
  const open = key.indexOf('{');
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return crc16(key.slice(open + 1, close)) % 16384;
  }
  return crc16(key) % 16384;
}

describe('hash tags', () => {
  it.each([
    ['order:7', false],
    ['{order}:7', true],
    ['order:{7}', true],
    ['{}order', false], // empty: Redis hashes the whole key
    ['{}{order}', false], // only the first { counts, and its tag is empty
    ['order{', false],
    ['order}{', false],
    ['a{b}c{d}', true],
    ['{{a}}', true], // the tag is "{a"
    ['', false],
  ])('hasHashTag(%j) is %s, as Redis reads it', (name, tagged) => {
    expect(hasHashTag(name)).toBe(tagged);
  });

  it('wraps a name without braces as is, and encodes any other in two tags: its slot, then the escaped name', () => {
    expect(nameSegment('order:7')).toBe('{order:7}');
    expect(nameSegment('100%')).toBe('{100%}');
    expect(nameSegment('{}order')).toBe('{%7B%7Dorder}{%7B%7Dorder}');
    expect(nameSegment('tenant:{42}:order:7')).toBe('{42}{tenant:%7B42%7D:order:7}');
    expect(nameSegment('{x}')).toBe('{x}{%7Bx%7D}');
    expect(nameSegment('a%7B{b}')).toBe('{b}{a%257B%7Bb%7D}');
  });

  it('agrees with the slot Redis computes: a plain name hashes as the bare name, a tagged one as its tag', () => {
    for (const name of ['order:7', 'a', 'ünïcödé']) expect(redisSlot(`lock:${nameSegment(name)}`)).toBe(redisSlot(name));
    expect(redisSlot(`lock:${nameSegment('tenant:{42}:order')}`)).toBe(redisSlot('42'));
    expect(redisSlot(`lock:${nameSegment('{{a}}')}`)).toBe(redisSlot('{a'));
  });

  it('the slot function is the server\'s (checked against CLUSTER KEYSLOT of redis-server 7.0)', () => {
    expect(redisSlot('lock:{}{}')).toBe(6535);
    expect(redisSlot('lock:{}{}:channel')).toBe(10744);
    expect(redisSlot('lock:{{}')).toBe(4092);
    expect(redisSlot('{')).toBe(4092);
    expect(redisSlot('123456789')).toBe(0x31c3 % 16384); // the CRC16-XMODEM check value
  });

  it('gives every key of a name with stray braces one slot too', () => {
    for (const name of ['{}x', 'x}', '{', '{}{}', 'a}{b', '}', '}{', '}order']) {
      const lockKey = `lock:${nameSegment(name)}`;
      expect(redisSlot(`${lockKey}:channel`)).toBe(redisSlot(lockKey));
      expect(redisSlot(`${lockKey}:rq:1`)).toBe(redisSlot(lockKey));
    }
  });
});

describe('LockKeys', () => {
  const keys = new LockKeys('lock:');

  it('names every key of a lock inside the lock key, so they share its slot', () => {
    const lockKey = keys.lock('order:7');
    expect(lockKey).toBe('lock:{order:7}');
    const all = [
      LockKeys.channel(lockKey),
      LockKeys.line(lockKey),
      LockKeys.lineDeadlines(lockKey),
      LockKeys.waiterChannel(lockKey, 'owner-1'),
      LockKeys.fence(lockKey),
      LockKeys.releaseRecord(lockKey, 'req-1'),
    ];
    expect(all).toEqual([
      'lock:{order:7}:channel',
      'lock:{order:7}:line',
      'lock:{order:7}:deadlines',
      'lock:{order:7}:channel:owner-1',
      'lock:{order:7}:fence',
      'lock:{order:7}:rq:req-1',
    ]);
    for (const key of all) expect(redisSlot(key)).toBe(redisSlot(lockKey));
  });

  it('keeps read-write locks in a namespace of their own, in the same slot as the name', () => {
    const rwKey = keys.readWrite('order:7');
    expect(rwKey).toBe('lock:rw:{order:7}');
    expect(rwKey).not.toBe(keys.lock('order:7'));
    expect(LockKeys.readWriteLeases(rwKey)).toBe('lock:rw:{order:7}:leases');
    expect(redisSlot(LockKeys.readWriteLeases(rwKey))).toBe(redisSlot(keys.lock('order:7')));
  });

  it('uses the prefix as given, and a tag in the name picks the slot (names sharing a tag share a slot)', () => {
    expect(new LockKeys('').lock('x')).toBe('{x}');
    expect(new LockKeys('app1:locks:').lock('{tenant-9}:a')).toBe('app1:locks:{tenant-9}{%7Btenant-9%7D:a}');
    const tagged = new LockKeys('lock:');
    expect(redisSlot(tagged.lock('{tenant-9}:a'))).toBe(redisSlot(tagged.lock('{tenant-9}:b')));
  });
});
