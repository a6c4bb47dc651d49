import { LockNamePatternError } from '../errors';
import { GLOB_INVALID, GLOB_TOO_COSTLY } from '../lock.messages';

/**
 * `list({ match })`'s glob over lock names (Redis `MATCH` syntax: `*`, `?`, `[abc]`, `[^a-z]`, `\x`),
 * matched here and never handed to Redis: Redis's matcher backtracks (`*?*?*?*?!` over long keys
 * froze a server for seconds), and it would see keys, not names. The pattern is a request value in
 * admin endpoints, so it is bounded: at most `MAX_GLOB_WILDCARDS` wildcards and a bounded length, and
 * the matcher below is linear in the name for a given pattern (no regular expression).
 */
export const MAX_GLOB_WILDCARDS = 4;

type Token =
  | { readonly type: 'star' }
  | { readonly type: 'any' }
  | { readonly type: 'char'; readonly char: string }
  | { readonly type: 'class'; readonly negated: boolean; readonly ranges: ReadonlyArray<readonly [number, number]> };

export class NameGlob {
  private constructor(private readonly tokens: readonly Token[]) {}

  /**
   * Parses `pattern`, or throws a `LockNamePatternError` (a `TypeError`, answered 400) saying why it is refused: invalid (an unterminated
   * `[`, a range such as `[z-a]`, an empty class, a trailing `\`), more than `MAX_GLOB_WILDCARDS`
   * `*` and `?`, or longer than `maxLength`.
   */
  static parse(pattern: unknown, maxLength: number): NameGlob {
    if (typeof pattern !== 'string') throw new LockNamePatternError(GLOB_INVALID(String(pattern), 'it must be a string'));
    if (pattern.length > maxLength) throw new LockNamePatternError(GLOB_TOO_COSTLY(pattern, `it has ${pattern.length} characters, at most ${maxLength} are accepted`));
    const chars = Array.from(pattern);
    const tokens: Token[] = [];
    let wildcards = 0;
    for (let i = 0; i < chars.length; i++) {
      const c = chars[i];
      if (c === '*' || c === '?') {
        wildcards += 1;
        // Consecutive stars are one star: same meaning, and no extra cost.
        if (c === '*' && tokens.at(-1)?.type === 'star') continue;
        tokens.push(c === '*' ? { type: 'star' } : { type: 'any' });
      } else if (c === '\\') {
        if (i + 1 >= chars.length) throw new LockNamePatternError(GLOB_INVALID(pattern, 'it ends with a lone \\ (escape a literal \\ as \\\\)'));
        tokens.push({ type: 'char', char: chars[++i] });
      } else if (c === '[') {
        const parsed = parseClass(chars, i, pattern);
        tokens.push(parsed.token);
        i = parsed.end;
      } else tokens.push({ type: 'char', char: c });
    }
    if (wildcards > MAX_GLOB_WILDCARDS) {
      throw new LockNamePatternError(GLOB_TOO_COSTLY(pattern, `it has ${wildcards} wildcards (* and ?), at most ${MAX_GLOB_WILDCARDS} are accepted`));
    }
    return new NameGlob(tokens);
  }

  /**
   * Whether `name` matches, in O(name length x pattern length) steps at worst: a star only ever
   * retries from the last star seen (a match of the rest after an earlier star could only be found
   * again after the later one), so nothing is explored twice per position.
   */
  matches(name: string): boolean {
    const text = Array.from(name);
    const { tokens } = this;
    let t = 0;
    let s = 0;
    let starToken = -1;
    let starText = 0;
    while (s < text.length) {
      const token = tokens[t];
      if (token !== undefined && token.type !== 'star' && matchesOne(token, text[s])) {
        t += 1;
        s += 1;
      } else if (token?.type === 'star') {
        starToken = t;
        starText = s;
        t += 1;
      } else if (starToken !== -1) {
        t = starToken + 1;
        starText += 1;
        s = starText;
      } else return false;
    }
    while (tokens[t]?.type === 'star') t += 1;
    return t === tokens.length;
  }
}

function matchesOne(token: Exclude<Token, { type: 'star' }>, char: string): boolean {
  switch (token.type) {
    case 'any':
      return true;
    case 'char':
      return token.char === char;
    case 'class': {
      const code = char.codePointAt(0)!;
      const inside = token.ranges.some(([low, high]) => code >= low && code <= high);
      return inside !== token.negated;
    }
  }
}

function parseClass(chars: readonly string[], open: number, pattern: string): { token: Token; end: number } {
  let i = open + 1;
  const negated = chars[i] === '^';
  if (negated) i += 1;
  const ranges: Array<[number, number]> = [];
  for (; i < chars.length && chars[i] !== ']'; i++) {
    let low = chars[i];
    if (low === '\\') {
      if (i + 1 >= chars.length) break;
      low = chars[++i];
    }
    if (chars[i + 1] === '-' && i + 2 < chars.length && chars[i + 2] !== ']') {
      let high = chars[i + 2];
      i += 2;
      if (high === '\\') {
        if (i + 1 >= chars.length) break;
        high = chars[++i];
      }
      const [from, to] = [low.codePointAt(0)!, high.codePointAt(0)!];
      if (from > to) throw new LockNamePatternError(GLOB_INVALID(pattern, `the range [${low}-${high}] is reversed (write [${high}-${low}])`));
      ranges.push([from, to]);
    } else {
      const code = low.codePointAt(0)!;
      ranges.push([code, code]);
    }
  }
  if (i >= chars.length) throw new LockNamePatternError(GLOB_INVALID(pattern, `the [ at position ${open} is never closed by ]`));
  if (ranges.length === 0) throw new LockNamePatternError(GLOB_INVALID(pattern, `the class at position ${open} is empty`));
  return { token: { type: 'class', negated, ranges }, end: i };
}
