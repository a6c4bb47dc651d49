import calculateSlot from 'cluster-key-slot';
import fc from 'fast-check';
import { LockKeys, nameOfSegment, nameSegment } from '../../lib/redis/lock-keys';
import { SemaphoreKeys } from '../../lib/semaphores/semaphore-keys';
import { instanceKeyPrefix, InstanceRegistry } from '../../lib/runtime/instance-registry';

/**
 * One name, one lock (docs/architecture.md#keys), as properties over arbitrary strings: distinct
 * names never share a key, of any kind or role; every key of a name lands in one slot; a key decodes
 * back to its kind and name.
 */

const PREFIX = 'lock:';
const keys = new LockKeys(PREFIX);
const OWNER = '3f0c2a5e-1b7d-4c1e-9d2f-0a6b8c4d2e10:17';

/** Every key and channel the library makes for `name`, by kind, each with its role. */
function allKeysOf(name: string): Array<{ kind: string; role: string; key: string }> {
  const lockKey = keys.lock(name);
  const rwKey = keys.readWrite(name);
  const sem = new SemaphoreKeys(keys, name);
  const of = (kind: string, entries: Record<string, string>) => Object.entries(entries).map(([role, key]) => ({ kind, role, key }));
  return [
    ...of('lock', {
      main: lockKey,
      channel: LockKeys.channel(lockKey),
      line: LockKeys.line(lockKey),
      deadlines: LockKeys.lineDeadlines(lockKey),
      fence: LockKeys.fence(lockKey),
      waiterChannel: LockKeys.waiterChannel(lockKey, OWNER),
      releaseRecord: LockKeys.releaseRecord(lockKey, `${OWNER}:9`),
    }),
    ...of('readWrite', {
      main: rwKey,
      leases: LockKeys.readWriteLeases(rwKey),
      channel: LockKeys.channel(rwKey),
      fence: LockKeys.fence(rwKey),
      releaseRecord: LockKeys.releaseRecord(rwKey, `${OWNER}:9`),
    }),
    ...of('semaphore', {
      main: sem.base,
      leases: sem.leases,
      line: sem.line,
      deadlines: sem.deadlines,
      fence: sem.fence,
      channel: sem.channel,
      releaseRecord: sem.releaseRecord(OWNER, '9'),
    }),
  ];
}

/**
 * Hostile text: braces, colons, `%` and its escapes, the namespaces and suffixes, unicode, empty
 * segments, and lone surrogates (UTF-8 has no bytes for them: Redis receives U+FFFD for each).
 */
const hostileChar = fc.constantFrom('{', '}', ':', '%', '7', 'B', 'D', '2', '5', 'u', 'x', 's', 'e', 'm', 'r', 'w', '~', ' ', 'é', '😀', '\n', '*', '\uD800', '\uDC00', '\uDBFF', '\uFFFD');
const hostileName = fc.oneof(
  fc.string({ unit: hostileChar, minLength: 1, maxLength: 24 }),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }),
  fc
    .array(fc.constantFrom('', '{', '}', 'sem:', 'rw:', ':line', ':fence', ':channel', ':rq:', ':deadlines', ':leases', '%7B', '%7D', '%25', '42', 'v'), {
      minLength: 1,
      maxLength: 8,
    })
    .map((parts) => parts.join(''))
    .filter((name) => name.length > 0),
);

/** A key as Redis receives it: ioredis sends strings as UTF-8, where every lone surrogate becomes U+FFFD. */
const sentBytes = (key: string): string => Buffer.from(key, 'utf8').toString('latin1');

/** The server's slot rule (first `{`, next `}`, not empty) over the bytes it receives. */
function serverSlot(key: string): number {
  const bytes = Buffer.from(key, 'utf8');
  const open = bytes.indexOf('{');
  const close = open === -1 ? -1 : bytes.indexOf('}', open + 1);
  return calculateSlot(close > open + 1 ? bytes.subarray(open + 1, close) : bytes);
}

describe('lock name encoding (properties)', () => {
  it('distinct names never share a key, whatever kind or role, as the bytes Redis receives (UTF-8)', () => {
    fc.assert(
      fc.property(hostileName, hostileName, (a, b) => {
        fc.pre(a !== b);
        const ofA = new Set(allKeysOf(a).map((entry) => sentBytes(entry.key)));
        for (const { key } of allKeysOf(b)) expect(ofA.has(sentBytes(key))).toBe(false);
      }),
      { numRuns: 3000 },
    );
  });

  it('names that differ only in lone surrogates (U+FFFD once sent) are distinct locks', () => {
    const names = ['x\uD800', 'x\uD801', 'x\uFFFD', 'x\uDC00', '\uD800x', 'x\uD800\uD800', 'x\uD800\uDC00'];
    const keySets = names.map((name) => new Set(allKeysOf(name).map((entry) => sentBytes(entry.key))));
    for (let i = 0; i < names.length; i++) {
      for (let j = i + 1; j < names.length; j++) for (const key of keySets[j]) expect(keySets[i].has(key)).toBe(false);
    }
  });

  it('one name never uses one key for two kinds or roles', () => {
    fc.assert(
      fc.property(hostileName, (name) => {
        const all = allKeysOf(name).map((entry) => entry.key);
        expect(new Set(all).size).toBe(all.length);
      }),
      { numRuns: 2000 },
    );
  });

  it('every key of a name lands in one cluster slot, and a name with a hash tag keeps the tag\'s slot', () => {
    fc.assert(
      fc.property(hostileName, (name) => {
        const slots = new Set(allKeysOf(name).map(({ key }) => serverSlot(key)));
        expect(slots.size).toBe(1);
        // ioredis routes by cluster-key-slot over the string: it must read the server's slot (our
        // keys never start with an empty tag, nor hold a lone surrogate in their first tag).
        for (const { key } of allKeysOf(name)) expect(calculateSlot(key)).toBe(serverSlot(key));
        const open = name.indexOf('{');
        const close = open === -1 ? -1 : name.indexOf('}', open + 1);
        const tag = close > open + 1 ? name.slice(open + 1, close) : undefined;
        if (tag !== undefined && (tag as unknown as { isWellFormed(): boolean }).isWellFormed()) expect([...slots][0]).toBe(calculateSlot(tag));
      }),
      { numRuns: 2000 },
    );
  });

  it('a main key decodes to its kind and name; no other key decodes as a main key', () => {
    fc.assert(
      fc.property(hostileName, (name) => {
        for (const { kind, role, key } of allKeysOf(name)) {
          if (role === 'main') expect(keys.parse(key)).toEqual({ kind, name });
          else expect(keys.parse(key)).toBeUndefined();
        }
        expect(nameOfSegment(nameSegment(name))).toBe(name);
      }),
      { numRuns: 2000 },
    );
  });

  it('no name reaches an instance record', () => {
    const instanceKey = InstanceRegistry.keyOf(instanceKeyPrefix(PREFIX), '3f0c2a5e-1b7d-4c1e-9d2f-0a6b8c4d2e10');
    fc.assert(
      fc.property(hostileName, (name) => {
        for (const { key } of allKeysOf(name)) expect(key.startsWith(instanceKeyPrefix(PREFIX))).toBe(false);
        expect(allKeysOf(name).map((entry) => entry.key)).not.toContain(instanceKey);
      }),
      { numRuns: 500 },
    );
  });

  it('the aliases and squatters of the old layout are distinct locks now', () => {
    const pairs: Array<[string, string]> = [
      ['x', '{x}'],
      ['}abc', '~}abc'],
      ['42', '{42}:line'],
      ['s', 'sem:{s}'],
      ['v', 'rw:{v}'],
      ['v', '{v}:fence'],
      ['v', '{v}:deadlines'],
      ['v', '{v}:leases'],
      ['v', '{v}:channel'],
    ];
    for (const [victim, hostile] of pairs) {
      const victimKeys = new Set(allKeysOf(victim).map((entry) => entry.key));
      for (const { key } of allKeysOf(hostile)) expect(victimKeys.has(key)).toBe(false);
    }
  });
});
