import { KeyTemplateError } from '../errors';
import {
  type DecoratorName,
  KEY_TEMPLATE_BAD_VALUE,
  KEY_TEMPLATE_NAMES_UNREADABLE,
  KEY_TEMPLATE_TOO_LONG,
  quoteName,
  KEY_TEMPLATE_SYNTAX,
  KEY_TEMPLATE_DID_YOU_MEAN,
  KEY_TEMPLATE_UNKNOWN_PARAMETER,
  KEY_TEMPLATE_UNKNOWN_POSITION,
} from '../lock.messages';
import type { DeclaredParameter } from './parameter-names';
import { closestName } from './closest-name';

/** One step after a placeholder's root: `.name`, `[0]` or `['key']`. */
export type PathStep = { readonly property: string } | { readonly index: number };

/** A `#...` placeholder of a key template. */
export interface Placeholder {
  /** As written in the template, for error messages: `#dto.id`, `#{user.id}`. */
  readonly source: string;
  /** A parameter name, or a position: `0`, `p0`, `a0`. */
  readonly root: string;
  readonly steps: readonly PathStep[];
}

/** Literal text or a placeholder. */
export type TemplatePart = string | Placeholder;

/**
 * Builds the key of one call from the call's arguments; throws `KeyTemplateError` for unusable
 * values, a key longer than `maxLength` (the module's `maxNameLength`) among them.
 */
export type KeyBuilder = (args: readonly unknown[], maxLength?: number) => string;

const IDENTIFIER = /^[\p{ID_Start}$_][\p{ID_Continue}$\u200c\u200d]*/u;
const DIGITS = /^\d+/;
const POSITIONAL_ALIAS = /^[pa](\d+)$/;
const QUOTED_INDEX = /^\[\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\s*\]/;
const NUMERIC_INDEX = /^\[\s*(\d+)\s*\]/;

/**
 * Parses a key template (docs/architecture.md#key-templates): text with `#name`, `#name.path[0].more`, `#{name.path}` (braces
 * delimit the placeholder from the text that follows), positions `#0` / `#p0` / `#a0`, and `##` for a
 * literal `#`. Throws `KeyTemplateError` naming the position of a syntax error.
 */
export function parseKeyTemplate(template: string): TemplatePart[] {
  if (template.length === 0) throw new KeyTemplateError(KEY_TEMPLATE_SYNTAX(template, 0, 'a key cannot be empty'));
  const parts: TemplatePart[] = [];
  let text = '';
  let i = 0;
  while (i < template.length) {
    if (template[i] !== '#') {
      text += template[i++];
      continue;
    }
    if (template[i + 1] === '#') {
      text += '#';
      i += 2;
      continue;
    }
    if (text) parts.push(text);
    text = '';
    const parsed = template[i + 1] === '{' ? parseBraced(template, i) : parseBare(template, i);
    parts.push(parsed.placeholder);
    i = parsed.end;
  }
  if (text) parts.push(text);
  return parts;
}

function parseBare(template: string, start: number): { placeholder: Placeholder; end: number } {
  const rest = template.slice(start + 1);
  const root = IDENTIFIER.exec(rest)?.[0] ?? DIGITS.exec(rest)?.[0];
  if (!root) {
    throw new KeyTemplateError(
      KEY_TEMPLATE_SYNTAX(template, start, "'#' must be followed by a parameter name, a position (#0) or {...}; write ## for a literal #"),
    );
  }
  const { steps, length } = parseSteps(rest.slice(root.length));
  const end = start + 1 + root.length + length;
  return { placeholder: { source: template.slice(start, end), root, steps }, end };
}

function parseBraced(template: string, start: number): { placeholder: Placeholder; end: number } {
  const close = template.indexOf('}', start + 2);
  if (close === -1) throw new KeyTemplateError(KEY_TEMPLATE_SYNTAX(template, start, "'#{' is never closed by '}'"));
  const inner = template.slice(start + 2, close).trim();
  const root = IDENTIFIER.exec(inner)?.[0] ?? DIGITS.exec(inner)?.[0];
  if (!root) throw new KeyTemplateError(KEY_TEMPLATE_SYNTAX(template, start, `'#{${inner}}' does not start with a parameter name or position`));
  const { steps, length } = parseSteps(inner.slice(root.length));
  if (length !== inner.length - root.length) {
    throw new KeyTemplateError(KEY_TEMPLATE_SYNTAX(template, start, `'#{${inner}}' is not a path like #{name.field[0]}`));
  }
  return { placeholder: { source: template.slice(start, close + 1), root, steps }, end: close + 1 };
}

/** Reads `.name`, `[0]`, `['key']` steps; the path ends at the first character that does not continue it. */
function parseSteps(text: string): { steps: PathStep[]; length: number } {
  const steps: PathStep[] = [];
  let i = 0;
  for (;;) {
    const rest = text.slice(i);
    const property = rest.startsWith('.') ? (IDENTIFIER.exec(rest.slice(1))?.[0] ?? DIGITS.exec(rest.slice(1))?.[0]) : undefined;
    if (property) {
      steps.push({ property });
      i += 1 + property.length;
      continue;
    }
    const numeric = NUMERIC_INDEX.exec(rest);
    if (numeric) {
      steps.push({ index: Number(numeric[1]) });
      i += numeric[0].length;
      continue;
    }
    const quoted = QUOTED_INDEX.exec(rest);
    if (quoted) {
      steps.push({ property: (quoted[1] ?? quoted[2]).replace(/\\(.)/g, '$1') });
      i += quoted[0].length;
      continue;
    }
    return { steps, length: i }; // `#id.` followed by text: the dot is text
  }
}

/** How a placeholder's root reads the call's arguments. */
type ArgumentReader = (args: readonly unknown[]) => unknown;

/**
 * Compiles `template` for a method whose declared parameters are `parameters` (undefined when they
 * cannot be read). Every placeholder is checked now, so a name the method does not have fails at
 * bootstrap with the method and the name; `method` is `Class.method` and `decorator` the decorator
 * using the template, for messages.
 */
export function compileKeyTemplate(
  template: string,
  parameters: readonly DeclaredParameter[] | undefined,
  method: string,
  decorator: DecoratorName = '@DistributedLock',
): KeyBuilder {
  const parts = parseKeyTemplate(template).map((part) => {
    if (typeof part === 'string') return part;
    const read = argumentReader(part, parameters, method, template, decorator);
    return { placeholder: part, text: (args: readonly unknown[]) => keyText(walk(read(args), part, method, template), part, method, template) };
  });
  const build = concatenation(parts);
  return (args, maxLength = Number.POSITIVE_INFINITY) => {
    const key = build(args);
    if (key.length > maxLength) throw tooLong(parts, args, key.length, maxLength, method, template);
    return key;
  };
}

type CompiledPart = string | { readonly placeholder: Placeholder; readonly text: (args: readonly unknown[]) => string };

/** The key text of compiled parts, specialised once per method for the usual shapes (no array or join per call). */
function concatenation(parts: readonly CompiledPart[]): (args: readonly unknown[]) => string {
  if (parts.length === 1) {
    const only = parts[0];
    return typeof only === 'string' ? () => only : only.text;
  }
  if (parts.length === 2) {
    const [first, second] = parts;
    if (typeof first === 'string' && typeof second !== 'string') return (args) => first + second.text(args);
    if (typeof first !== 'string' && typeof second === 'string') return (args) => first.text(args) + second;
  }
  return (args) => {
    let key = '';
    for (const part of parts) key += typeof part === 'string' ? part : part.text(args);
    return key;
  };
}

/** A key over the limit: blamed on the placeholder whose value is longest (the one a caller made long). */
function tooLong(parts: readonly CompiledPart[], args: readonly unknown[], length: number, maxLength: number, method: string, template: string): KeyTemplateError {
  let blamed: Placeholder | undefined;
  let longest = -1;
  for (const part of parts) {
    if (typeof part === 'string') continue;
    const size = part.text(args).length;
    if (size > longest) [blamed, longest] = [part.placeholder, size];
  }
  // A template without placeholders is checked at its first call like any other (its text is the name).
  const source = blamed?.source ?? template;
  return new KeyTemplateError(KEY_TEMPLATE_TOO_LONG(method, template, source, length, maxLength), blamed?.source);
}

function argumentReader(
  placeholder: Placeholder,
  parameters: readonly DeclaredParameter[] | undefined,
  method: string,
  template: string,
  decorator: DecoratorName,
): ArgumentReader {
  const { root } = placeholder;
  const declared = parameters?.findIndex((parameter) => parameter.name === root) ?? -1;
  if (declared !== -1) {
    // A real parameter named `p0` wins over the positional alias.
    return parameters![declared].rest ? (args) => args.slice(declared) : (args) => args[declared];
  }
  const position = DIGITS.test(root) && String(Number(root)) === root ? Number(root) : Number(POSITIONAL_ALIAS.exec(root)?.[1] ?? NaN);
  if (!Number.isNaN(position)) {
    const hasRest = parameters?.some((parameter) => parameter.rest) ?? true;
    if (parameters && !hasRest && position >= parameters.length) {
      throw new KeyTemplateError(KEY_TEMPLATE_UNKNOWN_POSITION(method, template, `#${root}`, parameters.length, decorator));
    }
    return (args) => args[position];
  }
  if (!parameters) throw new KeyTemplateError(KEY_TEMPLATE_NAMES_UNREADABLE(method, template, root, decorator));
  const known = parameters.map((parameter, i) => (parameter.name ? `${parameter.rest ? '...' : ''}${parameter.name}` : `#${i} (destructured)`));
  const names = parameters.flatMap((parameter) => (parameter.name ? [parameter.name] : []));
  // Minifiers rename parameters to single letters (`e`, `t`, `n`...): say so, and what survives. A
  // real short name (`id`, `to`) is not a sign of it, and a name close to the one asked is a typo.
  const looksMinified = names.length > 0 && names.every((name) => name.length === 1);
  const close = looksMinified ? undefined : closestName(root, names);
  throw new KeyTemplateError(
    KEY_TEMPLATE_UNKNOWN_PARAMETER(method, template, root, known.join(', ') || 'none', looksMinified, decorator) +
      (close ? KEY_TEMPLATE_DID_YOU_MEAN(close) : ''),
  );
}


function describeStep(step: PathStep): string {
  return 'index' in step ? `[${step.index}]` : `.${step.property}`;
}

function walk(value: unknown, placeholder: Placeholder, method: string, template: string): unknown {
  const { steps } = placeholder;
  let current = value;
  for (let i = 0; i < steps.length; i++) {
    if (current === undefined || current === null) {
      // The path reached so far is spelled out only for the message, not on every call.
      const reached = `#${placeholder.root}${steps.slice(0, i).map(describeStep).join('')}`;
      throw new KeyTemplateError(
        KEY_TEMPLATE_BAD_VALUE(method, template, placeholder.source, `unreachable (${reached} is ${String(current)})`),
        placeholder.source,
      );
    }
    const step = steps[i];
    current = 'index' in step ? (current as Record<number, unknown>)[step.index] : (current as Record<string, unknown>)[step.property];
  }
  return current;
}

/**
 * The text a value contributes to a key. `undefined`, `null`, `''`, NaN, arrays, functions and
 * objects without a `toString` of their own are refused: they would lock `order:undefined` or
 * `order:[object Object]` and serialise unrelated calls.
 */
function keyText(value: unknown, placeholder: Placeholder, method: string, template: string): string {
  const refuse = (problem: string): never => {
    throw new KeyTemplateError(KEY_TEMPLATE_BAD_VALUE(method, template, placeholder.source, problem), placeholder.source);
  };
  switch (typeof value) {
    case 'string':
      return value === '' ? refuse('an empty string') : value;
    case 'number':
      return Number.isFinite(value) ? String(value) : refuse(String(value));
    case 'bigint':
    case 'boolean':
      return String(value);
    case 'undefined':
      return refuse('undefined');
    case 'symbol':
    case 'function':
      return refuse(`a ${typeof value}`);
  }
  if (value === null) return refuse('null');
  if (Array.isArray(value)) return refuse('an array (a key function can return several keys)');
  const toString = (value as { toString?: unknown }).toString;
  if (typeof toString !== 'function' || toString === Object.prototype.toString) {
    return refuse('an object, which has no key text of its own (name one of its fields)');
  }
  const text = String(value);
  if (text === '') return refuse('an object whose text is empty');
  if (text.startsWith('[object ')) return refuse(`an object whose text is ${quoteName(text)} (name one of its fields)`);
  return text;
}
