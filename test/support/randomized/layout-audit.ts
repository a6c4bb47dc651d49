/**
 * What the randomized hold model checks of the keyspace once a schedule settled, per layout: no key
 * left without a TTL but those the layout keeps by design, and what still counts as held.
 *
 * Layout 'redisson' keeps by design (docs/redisson-interop.md#keys): a semaphore's counter `N` (never
 * deleted) and its leases `{N}:timeout` (a zset that follows `N`'s TTL, so none), a fair lock's queue
 * `redisson_lock_queue:{N}` and deadlines `redisson_lock_timeout:{N}` (no TTL; emptied by the next
 * attempt once the deadlines passed), and, with `fencedLocks`, the token counter
 * `redisson_lock_token:{N}`, and this library's semaphore marker `nestjs_redis_locks_permits:{N}`
 * (issue 42), plus the schedule's application keys. Held there: a lock's hash `N`, a read hold's
 * `{N}:<owner>:rwlock_timeout:<k>`, and a semaphore lease whose deadline is still ahead.
 * Unlock latches (`redisson_unlock_latch:*`, 10 s) hold nothing.
 */
import type Redis from 'ioredis';
import { isHoldKey, keysWithTtl } from '../key-audit';
import type { LayoutKinds } from './kinds';
import { NAMES } from './schedule';

export class LayoutAudit {
  constructor(
    private readonly raw: Redis,
    private readonly kinds: LayoutKinds,
    /** Layout 'redisson': whether plain locks were fenced (their token counters are kept). */
    private readonly fencedLocks = false,
  ) {}

  /** The application's keys (issue 42's hostile ops), which are nobody's locks: kept, never held. */
  private get appKeys(): Set<string> {
    return this.kinds.layout === 'redisson' ? new Set(this.kinds.appKeys().map(({ key }) => key)) : new Set();
  }

  /** Keys that will never expire by themselves and that the layout does not keep by design. */
  async keysWithoutTtl(): Promise<string[]> {
    const kept = this.keptByDesign();
    return (await keysWithTtl(this.raw)).filter(({ key, pttl }) => pttl === -1 && !kept.has(key)).map(({ key }) => key);
  }

  /** Keys (with their PTTL) that still hold a lock or a permit. */
  async held(): Promise<Array<{ key: string; pttl: number }>> {
    const keys = await keysWithTtl(this.raw);
    if (this.kinds.layout === 'native') return keys.filter(({ key }) => isHoldKey(key));
    const held: Array<{ key: string; pttl: number }> = [];
    const leases = new Set(NAMES.map((n) => this.semaphoreLeases(n)));
    const appKeys = this.appKeys;
    for (const entry of keys) {
      if (appKeys.has(entry.key)) continue;
      // The schedule's own names only (not Redisson's derived keys, nor this library's instance records).
      if (!entry.key.startsWith(this.kinds.prefix) && !entry.key.startsWith(`{${this.kinds.prefix}`)) continue;
      if (leases.has(entry.key)) {
        if ((await this.raw.zcount(entry.key, `(${Date.now()}`, '+inf')) > 0) held.push(entry);
        continue;
      }
      if (/:rwlock_timeout:\d+$/.test(entry.key) || (await this.raw.type(entry.key)) === 'hash') held.push(entry);
    }
    return held;
  }

  private keptByDesign(): Set<string> {
    const kept = new Set<string>();
    if (this.kinds.layout === 'native') return kept;
    for (const key of this.appKeys) kept.add(key);
    for (const n of NAMES) {
      kept.add(this.kinds.lockName('semaphore', n));
      kept.add(`nestjs_redis_locks_permits:{${this.kinds.lockName('semaphore', n)}}`);
      kept.add(this.semaphoreLeases(n));
      const fair = this.kinds.lockName('fair', n);
      kept.add(`redisson_lock_queue:{${fair}}`);
      kept.add(`redisson_lock_timeout:{${fair}}`);
      if (this.fencedLocks) kept.add(`redisson_lock_token:{${this.kinds.lockName('plain', n)}}`);
    }
    return kept;
  }

  private semaphoreLeases(name: string): string {
    return `{${this.kinds.lockName('semaphore', name)}}:timeout`;
  }
}
