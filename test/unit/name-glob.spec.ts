import fc from 'fast-check';
import { MAX_GLOB_WILDCARDS, NameGlob } from '../../lib/introspection/name-glob';
import { redisGlobToRegExp } from '../../lib/redis/redis-glob';

/** `list({ match })`'s glob: Redis MATCH syntax, refused when invalid or too costly, matched in linear time. */

const parse = (pattern: string) => NameGlob.parse(pattern, 2048);

describe('NameGlob', () => {
  it.each([
    ['order:*', 'order:7', true],
    ['order:*', 'orders:7', false],
    ['order:?', 'order:7', true],
    ['order:?', 'order:77', false],
    ['*:7', 'a:b:7', true],
    ['[ab]x', 'bx', true],
    ['[^ab]x', 'bx', false],
    ['[a-c]*', 'c-rest', true],
    ['\\*x', '*x', true],
    ['\\*x', 'ax', false],
    ['{42}*', '{42}:line', true],
    ['é?', 'é😀', true],
    ['', '', true],
    ['**', 'anything', true],
  ])('%j matches %j: %s', (pattern, name, expected) => {
    expect(parse(pattern).matches(name)).toBe(expected);
  });

  it.each([
    ['[z-a]', /invalid: the range \[z-a\] is reversed/],
    ['order:[abc', /invalid: the \[ at position 6 is never closed by \]/],
    ['[]', /invalid: the class at position 0 is empty/],
    ['x\\', /invalid: it ends with a lone \\/],
    ['*?*?*?*?*?*?*?!', /too costly to match: it has 14 wildcards \(\* and \?\), at most 4 are accepted/],
    ['a*b*c*d*e*', /too costly to match: it has 5 wildcards/],
  ])('refuses %j with a TypeError saying why', (pattern, why) => {
    expect(() => parse(pattern)).toThrow(TypeError);
    expect(() => parse(pattern)).toThrow(why);
  });

  it('refuses a pattern longer than its bound, and anything but a string', () => {
    expect(() => NameGlob.parse('x'.repeat(101), 100)).toThrow(/too costly to match: it has 101 characters, at most 100/);
    expect(() => NameGlob.parse(['a'], 100)).toThrow(TypeError);
  });

  it('quotes at most 200 characters of the pattern in its message', () => {
    const pattern = `[${'a'.repeat(500)}`;
    let message = '';
    try {
      parse(pattern);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('(501 characters)');
    expect(message.length).toBeLessThan(400);
  });

  it(`accepts up to ${MAX_GLOB_WILDCARDS} wildcards, and agrees with Redis's glob semantics on random inputs`, () => {
    const unit = fc.constantFrom('a', 'b', ':', '{', '}', '*', '?', '[a-b]', '[^a]', '\\*');
    fc.assert(
      fc.property(fc.array(unit, { maxLength: 8 }), fc.string({ unit: fc.constantFrom('a', 'b', ':', '{', '}', '*'), maxLength: 10 }), (parts, name) => {
        const pattern = parts.join('');
        const wildcards = parts.filter((p) => p === '*' || p === '?').length;
        fc.pre(wildcards <= MAX_GLOB_WILDCARDS);
        expect(parse(pattern).matches(name)).toBe(redisGlobToRegExp(pattern).test(name));
      }),
      { numRuns: 3000 },
    );
  });

  it('matches a pathological pattern over a long name in linear time (no backtracking blow-up)', () => {
    const name = 'a'.repeat(2048);
    const started = performance.now();
    for (const pattern of ['*a*a*a*b', '*?*?!', '*aaaaaaaaaaaaaaaaaaaaaaaaaaaaab*', `*${'a'.repeat(1000)}b*`]) {
      expect(parse(pattern).matches(name)).toBe(false);
    }
    // Generous: a backtracking matcher takes seconds to minutes here; this one a few milliseconds.
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
