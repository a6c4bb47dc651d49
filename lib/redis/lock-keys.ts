/**
 * Redis key naming. All keys of one lock share a hash slot: a name without a `{...}` hash tag is
 * wrapped in one (`lock:{order:7}`, `lock:{order:7}:channel`); a name with a tag is used as is.
 */
export class LockKeys {
  constructor(private readonly prefix: string) {}

  /** Key of a reentrant or fair lock (the two kinds share it, so they exclude each other). */
  lock(name: string): string {
    return this.prefix + withHashTag(name);
  }

  /** Key of a read-write lock: a namespace of its own so its layout never mixes with the plain one. */
  readWrite(name: string): string {
    return `${this.prefix}rw:${withHashTag(name)}`;
  }

  static channel(lockKey: string): string {
    return `${lockKey}:channel`;
  }

  static releaseRecord(lockKey: string, requestId: string): string {
    return `${lockKey}:rq:${requestId}`;
  }
}

/** Redis hashes only what is inside the first `{` and the next `}`, when that is not empty. */
export function hasHashTag(name: string): boolean {
  const open = name.indexOf('{');
  if (open === -1) return false;
  const close = name.indexOf('}', open + 1);
  return close > open + 1;
}

export function withHashTag(name: string): string {
  return hasHashTag(name) ? name : `{${name}}`;
}
