import { checkLockName } from '../validators';

/**
 * Redis key naming (docs/architecture.md#keys). Every key is `prefix + namespace + segment(name) +
 * suffix`, where the namespace is the kind's (`''`, `rw:`, `sem:`), the suffix the key's role
 * (`''`, `:line`, `:channel`, `:rq:<id>`...) and the segment encodes the name so that one name
 * gives one lock and reaches no other:
 *
 * - a name without `{` or `}` is wrapped as is: `{order:7}` (today's key, and its own hash slot);
 * - any other name is two tags: the slot part, then the whole name with `%`, `{` and `}`
 *   percent-escaped: `{42}{tenant:%7B42%7D:a}`. The slot part is the name's own hash tag when it has
 *   one (the slot the caller chose), else the escaped name. A name with a lone surrogate takes this
 *   form too (escaped as `%uD800`): sent as UTF-8 it would otherwise be U+FFFD, like any other.
 *
 * Neither form has a `}` inside a tag, so the first `}` ends the first tag and what follows tells
 * the forms apart (`{` for the second, `:` or nothing for a suffix): the key gives back the
 * namespace, the name and the role, and two names never share a key. Every key of a name has the
 * same first tag, so it lands in one cluster slot.
 */
export class LockKeys {
  constructor(
    private readonly prefix: string,
    /** Longest name accepted (`maxNameLength`); a longer one is refused before any key is made. */
    readonly maxNameLength = Number.POSITIVE_INFINITY,
  ) {}

  /** Key of a reentrant or fair lock (the two kinds share it, so they exclude each other). */
  lock(name: string): string {
    checkLockName(name, this.maxNameLength);
    return this.prefix + nameSegment(name);
  }

  /** Key of a read-write lock: a namespace of its own so its layout never mixes with the plain one. */
  readWrite(name: string): string {
    checkLockName(name, this.maxNameLength);
    return `${this.prefix}${READ_WRITE_NAMESPACE}${nameSegment(name)}`;
  }

  /** Main key of a semaphore (its other keys are this plus a suffix, see `SemaphoreKeys`). */
  semaphore(name: string): string {
    checkLockName(name, this.maxNameLength);
    return `${this.prefix}${SEMAPHORE_NAMESPACE}${nameSegment(name)}`;
  }

  /**
   * The kind and name of a main key this module would make (`lock`, `readWrite`, `semaphore`), or
   * undefined for any other key (a line, a fence, a foreign key, a key of the layout before names were
   * escaped). For `list`, which finds keys and reports names.
   */
  parse(key: string): { kind: KeyKind; name: string } | undefined {
    if (!key.startsWith(this.prefix)) return undefined;
    const rest = key.slice(this.prefix.length);
    for (const [namespace, kind] of NAMESPACES) {
      if (!rest.startsWith(namespace)) continue;
      const name = nameOfSegment(rest.slice(namespace.length));
      if (name !== undefined) return { kind, name };
    }
    return undefined;
  }

  static channel(lockKey: string): string {
    return `${lockKey}:channel`;
  }

  /** A lock's waiting line (list of waiter entries, first come first), while anyone waits. */
  static line(lockKey: string): string {
    return `${lockKey}:line`;
  }

  /** The deadlines of a lock's waiters (sorted set entry -> deadline on the server clock). */
  static lineDeadlines(lockKey: string): string {
    return `${lockKey}:deadlines`;
  }

  /** When each of a lock's waiters last attempted (hash entry -> ms on the server clock). */
  static lineSeen(lockKey: string): string {
    return `${lockKey}:seen`;
  }

  /** The keys of a lock and its line, in the order its scripts take them after the lock's own. */
  static lineKeys(lockKey: string): [string, string, string, string] {
    return [LockKeys.line(lockKey), LockKeys.lineDeadlines(lockKey), LockKeys.lineSeen(lockKey), LockKeys.fence(lockKey)];
  }

  /**
   * The channel on which a lock's line tells one process's plain and read-write waiters of their
   * grants: the lock's channel plus the module instance's client id (a grant wakes only the process
   * of the waiter it names).
   */
  static clientChannel(lockKey: string, clientId: string): string {
    return `${LockKeys.channel(lockKey)}:${clientId}`;
  }

  /** The channel on which a fair lock wakes one waiter: the lock's channel plus the waiter's owner id. */
  static waiterChannel(lockKey: string, ownerId: string): string {
    return `${LockKeys.channel(lockKey)}:${ownerId}`;
  }

  /** A read-write lock's per-owner leases (sorted set owner id -> deadline on the server clock). */
  static readWriteLeases(readWriteKey: string): string {
    return `${readWriteKey}:leases`;
  }

  /** The last fencing token handed out for a lock (or read-write lock) key, kept while recently used. */
  static fence(lockKey: string): string {
    return `${lockKey}:fence`;
  }

  static releaseRecord(lockKey: string, requestId: string): string {
    return `${lockKey}:rq:${requestId}`;
  }
}

export type KeyKind = 'lock' | 'readWrite' | 'semaphore';

const READ_WRITE_NAMESPACE = 'rw:';
const SEMAPHORE_NAMESPACE = 'sem:';
/** A lock's segment starts with `{`, so it never starts like another kind's namespace. */
const NAMESPACES: ReadonlyArray<readonly [string, KeyKind]> = [
  ['', 'lock'],
  [READ_WRITE_NAMESPACE, 'readWrite'],
  [SEMAPHORE_NAMESPACE, 'semaphore'],
];

/** Redis hashes only what is inside the first `{` and the next `}`, when that is not empty. */
export function hasHashTag(name: string): boolean {
  return hashTagOf(name) !== undefined;
}

/** The text Redis Cluster hashes for `name`: between its first `{` and the next `}`, when not empty. */
export function hashTagOf(name: string): string | undefined {
  const open = name.indexOf('{');
  if (open === -1) return undefined;
  const close = name.indexOf('}', open + 1);
  return close > open + 1 ? name.slice(open + 1, close) : undefined;
}

/** No lone surrogate: UTF-8 (what ioredis sends) has no bytes for one, Redis would get U+FFFD. */
const isWellFormed = (text: string): boolean => (text as unknown as { isWellFormed(): boolean }).isWellFormed();

/**
 * Whether `name` needs the escaped form: a brace would end or open a tag, and two names that differ
 * only in lone surrogates would reach Redis as the same bytes.
 */
const needsEscaping = (name: string): boolean => name.includes('{') || name.includes('}') || !isWellFormed(name);

const ESCAPED_CHARACTERS = /[%{}]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * `%`, `{` and `}` percent-escaped (`%25`, `%7B`, `%7D`), and each lone surrogate as `%u` and its
 * code (`%uD800`): the result holds no brace, is well-formed, and decodes to exactly `name`.
 */
export function escapeName(name: string): string {
  return name.replace(ESCAPED_CHARACTERS, (c) =>
    c === '%' ? '%25' : c === '{' ? '%7B' : c === '}' ? '%7D' : `%u${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

export function unescapeName(escaped: string): string {
  return escaped.replace(/%(25|7B|7D|u[0-9A-F]{4})/g, (_, code: string) =>
    code === '25' ? '%' : code === '7B' ? '{' : code === '7D' ? '}' : String.fromCharCode(parseInt(code.slice(1), 16)),
  );
}

/**
 * The part of every key of `name` that names it: `{name}` for a name without braces (or lone
 * surrogates), else `{slot}{escaped name}` (see `LockKeys`). Never empty inside the first tag, so Redis hashes that tag.
 */
export function nameSegment(name: string): string {
  if (!needsEscaping(name)) return `{${name}}`;
  const escaped = escapeName(name);
  // A tag holds no `}` by definition, so it may stand unescaped: the slot stays the one the caller
  // chose (unless it holds a lone surrogate, which clients and Redis would hash differently).
  const tag = hashTagOf(name);
  return `{${tag !== undefined && isWellFormed(tag) ? tag : escaped}}{${escaped}}`;
}

/** The name a whole segment (nothing after it) encodes, or undefined when `nameSegment` never makes it. */
export function nameOfSegment(segment: string): string | undefined {
  if (!segment.startsWith('{')) return undefined;
  const close = segment.indexOf('}');
  if (close === -1) return undefined;
  let name: string;
  if (close === segment.length - 1) name = segment.slice(1, close);
  else if (segment.startsWith('{', close + 1) && segment.endsWith('}')) name = unescapeName(segment.slice(close + 2, -1));
  else return undefined;
  if (name.length === 0) return undefined;
  // Only the canonical form: an old-layout key (`lock:{x}` for `{x}`) or a stray one is not ours.
  return nameSegment(name) === segment ? name : undefined;
}
