import { closingIndex, skipLiteral, splitTopLevel, withoutComments } from './source-scanner';

/** One declared parameter, as the function's source spells it. */
export interface DeclaredParameter {
  /** The parameter's name; undefined for a destructured parameter (`{ id }`, `[first]`). */
  readonly name: string | undefined;
  /** `...rest`: receives every argument from its position on. */
  readonly rest: boolean;
}

const IDENTIFIER = /^[\p{ID_Start}$_][\p{ID_Continue}$\u200c\u200d]*/u;

/**
 * An async method that tsc compiled for a target without async functions, whose parameters have
 * defaults or destructuring: tsc renames the outer parameters (`pay(orderId_1)`) and declares the
 * real ones on the generator it hands to `__awaiter(this, arguments, ...)`.
 */
const DOWNLEVELED_ASYNC = /^\s*\{\s*return\s+[\w$.]*__awaiter\(\s*this\s*,\s*arguments\s*,[^,]*,\s*function\s*\*?\s*\(/;

/**
 * The parameters of `fn`, read from `Function.prototype.toString` (the source as written or as tsc
 * emitted it): methods, async and generator methods, computed method names, `function` expressions
 * and arrow functions; default values, destructuring, rest parameters and comments are understood.
 * Returns undefined when the source cannot be read (a native or bound function).
 */
export function declaredParameters(fn: Function): DeclaredParameter[] | undefined {
  let source: string;
  try {
    source = Function.prototype.toString.call(fn);
  } catch {
    return undefined;
  }
  if (/\{\s*\[native code\]\s*\}\s*$/.test(source)) return undefined;
  const list = parameterList(source.trim());
  if (list === undefined) return undefined;
  const moved = DOWNLEVELED_ASYNC.exec(source.trim().slice(list.end + 1));
  const text = moved ? parameterList(source.trim().slice(list.end + 1 + moved[0].length - 1)) : list;
  if (text === undefined) return undefined;
  const cleaned = withoutComments(text.params).trim();
  if (cleaned === '') return [];
  return splitTopLevel(cleaned)
    .map((param) => param.trim())
    .filter((param) => param !== '') // a trailing comma
    .map(describeParameter);
}

/**
 * The text between the parentheses of the first parameter list of `source` (or the single
 * unparenthesised arrow parameter), and the index where that list ends.
 */
function parameterList(source: string): { params: string; end: number } | undefined {
  const bareArrow = /^(?:async\s+)?([\p{ID_Start}$_][\p{ID_Continue}$\u200c\u200d]*)\s*=>/u.exec(source);
  if (bareArrow && bareArrow[1] !== 'async') return { params: bareArrow[1], end: bareArrow[0].length - 1 };
  let previous = '';
  for (let i = 0; i < source.length; ) {
    const skipped = skipLiteral(source, i, previous);
    if (skipped !== -1) {
      i = skipped; // a quoted method name: 'my method'(a) {}
      previous = ')';
      continue;
    }
    const char = source[i];
    if (char === '[') {
      i = closingIndex(source, i) + 1; // a computed method name: [Symbol.iterator]() {}
      previous = ']';
      continue;
    }
    if (char === '(') {
      const close = closingIndex(source, i);
      return close >= source.length ? undefined : { params: source.slice(i + 1, close), end: close };
    }
    if (char === '{' || char === '=') return undefined; // no parameter list before the body
    if (!/\s/.test(char)) previous = char;
    i++;
  }
  return undefined;
}

function describeParameter(text: string): DeclaredParameter {
  if (text.startsWith('...')) {
    const rest = text.slice(3).trim();
    return { name: IDENTIFIER.exec(rest)?.[0], rest: true };
  }
  if (text.startsWith('{') || text.startsWith('[')) return { name: undefined, rest: false };
  return { name: IDENTIFIER.exec(text)?.[0], rest: false };
}
