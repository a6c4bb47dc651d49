/**
 * Just enough of a JavaScript lexer to walk a function's source without being fooled by brackets
 * or commas inside strings, template literals, comments and regular expression literals.
 */

const OPENERS: Record<string, string> = { '(': ')', '[': ']', '{': '}' };

/** Characters after which a `/` starts a regular expression rather than a division. */
const BEFORE_REGEX = new Set(['', '(', ',', '=', ':', '[', '!', '&', '|', '?', '{', '}', ';', '+', '-', '*', '%', '<', '>', '~', '^']);

/**
 * If a string, template literal, comment or regex literal starts at `index`, returns the index just
 * past it; otherwise -1. `previous` is the last significant character before `index`.
 */
export function skipLiteral(source: string, index: number, previous: string): number {
  const char = source[index];
  const next = source[index + 1];
  if (char === '"' || char === "'") return skipQuoted(source, index, char);
  if (char === '`') return skipTemplate(source, index);
  if (char === '/' && next === '/') {
    const end = source.indexOf('\n', index);
    return end === -1 ? source.length : end + 1;
  }
  if (char === '/' && next === '*') {
    const end = source.indexOf('*/', index + 2);
    return end === -1 ? source.length : end + 2;
  }
  if (char === '/' && BEFORE_REGEX.has(previous)) return skipRegex(source, index);
  return -1;
}

function skipQuoted(source: string, index: number, quote: string): number {
  for (let i = index + 1; i < source.length; i++) {
    if (source[i] === '\\') i++;
    else if (source[i] === quote) return i + 1;
  }
  return source.length;
}

function skipTemplate(source: string, index: number): number {
  for (let i = index + 1; i < source.length; i++) {
    if (source[i] === '\\') i++;
    else if (source[i] === '`') return i + 1;
    else if (source[i] === '$' && source[i + 1] === '{') i = closingIndex(source, i + 1);
  }
  return source.length;
}

function skipRegex(source: string, index: number): number {
  let inClass = false;
  for (let i = index + 1; i < source.length; i++) {
    const char = source[i];
    if (char === '\\') i++;
    else if (char === '[') inClass = true;
    else if (char === ']') inClass = false;
    else if (char === '/' && !inClass) {
      let end = i + 1;
      while (end < source.length && /[a-z]/i.test(source[end])) end++;
      return end;
    }
    else if (char === '\n') return i;
  }
  return source.length;
}

/** Index of the bracket closing the one at `open` (`(`, `[` or `{`); `source.length` when unbalanced. */
export function closingIndex(source: string, open: number): number {
  const stack = [OPENERS[source[open]]];
  let previous = source[open];
  for (let i = open + 1; i < source.length; ) {
    const skipped = skipLiteral(source, i, previous);
    if (skipped !== -1) {
      i = skipped;
      previous = ')'; // a literal is a value: a following `/` divides
      continue;
    }
    const char = source[i];
    if (OPENERS[char]) stack.push(OPENERS[char]);
    else if (char === stack[stack.length - 1]) {
      stack.pop();
      if (stack.length === 0) return i;
    }
    if (!/\s/.test(char)) previous = char;
    i++;
  }
  return source.length;
}

/** Splits `source` on commas that are not nested in brackets or literals. */
export function splitTopLevel(source: string, separator = ','): string[] {
  const parts: string[] = [];
  let start = 0;
  let previous = '';
  for (let i = 0; i < source.length; ) {
    const skipped = skipLiteral(source, i, previous);
    if (skipped !== -1) {
      i = skipped;
      previous = ')';
      continue;
    }
    const char = source[i];
    if (OPENERS[char]) {
      i = closingIndex(source, i) + 1;
      previous = ')';
      continue;
    }
    if (char === separator) {
      parts.push(source.slice(start, i));
      start = i + 1;
    }
    if (!/\s/.test(char)) previous = char;
    i++;
  }
  parts.push(source.slice(start));
  return parts;
}

/** `source` with its comments removed (strings kept as they are). */
export function withoutComments(source: string): string {
  let out = '';
  let previous = '';
  for (let i = 0; i < source.length; ) {
    const skipped = skipLiteral(source, i, previous);
    if (skipped !== -1) {
      const literal = source.slice(i, skipped);
      const isComment = literal.startsWith('//') || literal.startsWith('/*');
      out += isComment ? ' ' : literal;
      if (!isComment) previous = ')';
      i = skipped;
      continue;
    }
    if (!/\s/.test(source[i])) previous = source[i];
    out += source[i++];
  }
  return out;
}
