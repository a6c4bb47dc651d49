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

  /** A fair lock's waiting line (list of owner ids, first come first). */
  static fairLine(lockKey: string): string {
    return `${lockKey}:line`;
  }

  /** A fair lock's waiter deadlines (sorted set owner id -> deadline on the server clock). */
  static fairDeadlines(lockKey: string): string {
    return `${lockKey}:deadlines`;
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

/** Redis hashes only what is inside the first `{` and the next `}`, when that is not empty. */
export function hasHashTag(name: string): boolean {
  const open = name.indexOf('{');
  if (open === -1) return false;
  const close = name.indexOf('}', open + 1);
  return close > open + 1;
}

export function withHashTag(name: string): string {
  if (hasHashTag(name)) return name;
  // Wrapped as is, a name starting with `}` would make an empty tag, and Redis would then hash each
  // whole key (a lock's keys in different slots): such names share the tag `~` instead.
  return name.startsWith('}') ? `{~${name}}` : `{${name}}`;
}
