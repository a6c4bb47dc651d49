import { instanceIndexKey, instanceKeyPrefix } from '../runtime/instance-registry';
import { PERMIT_MARKER_PREFIX } from './redisson-names';

/**
 * In layout 'redisson' a lock name is a bare Redis key (so that Java sees the same lock), so a name
 * could be shaped like a key that belongs to another lock or structure: another lock's fencing
 * counter, a fair lock's queue, a semaphore's leases, a reader's timeout key, this library's own
 * records (docs/redisson-interop.md#names). Such a name is refused before anything is sent, in every
 * kind. These are the shapes, checked on the mapped name (the Redis key itself):
 *
 * - `redisson_...`: Redisson builds every derived key and channel as `redisson_<what>:{N}`
 *   (`redisson_lock_token:`, `redisson_lock_queue:`, `redisson_lock_timeout:`,
 *   `redisson_lock__channel`, `redisson_rwlock`, `redisson_sc:`, `redisson_unlock_latch:`, and those
 *   of its other objects);
 * - `...:timeout` (a permit-expirable semaphore's leases `{N}:timeout`) and `...:rwlock_timeout...`
 *   (a reader's timeout keys `{N}:<owner>:rwlock_timeout:<k>`);
 * - this library's own keys: the semaphore marker `nestjs_redis_locks_permits:{N}`, the instance
 *   records (`<keyPrefix>.instance:<id>`, `<keyPrefix>.instances`) and the native layout's keys under
 *   `keyPrefix` (`lock:{...}`, `lock:rw:...`, `lock:sem:...`), which a module of the other layout may
 *   keep on the same Redis.
 */
/** The start of every key this library adds to Redisson's layout (today the semaphore markers). */
const OWN_KEY_PREFIX = 'nestjs_redis_locks_';

export class RedissonNameRules {
  private readonly instancePrefix: string;
  private readonly instanceIndex: string;
  private readonly nativePrefixes: readonly string[];

  constructor(keyPrefix: string) {
    this.instancePrefix = instanceKeyPrefix(keyPrefix);
    this.instanceIndex = instanceIndexKey(keyPrefix);
    // Without a keyPrefix the native layout's keys are `{name}`, which Java names may well be.
    this.nativePrefixes = keyPrefix === '' ? [] : [`${keyPrefix}{`, `${keyPrefix}rw:`, `${keyPrefix}sem:`];
  }

  /**
   * Why every name starting with `prefix` (a key template's constant text) is refused, or undefined:
   * the rules a name's start decides.
   */
  prefixRefusal(prefix: string): string | undefined {
    return this.check(prefix, true);
  }

  /** Why the Redis key `key` cannot be a lock name in this layout (a few words), or undefined when it can. */
  refusal(key: string): string | undefined {
    return this.check(key, false);
  }

  private check(key: string, prefixOnly: boolean): string | undefined {
    if (key.startsWith('redisson_')) return "it starts with 'redisson_', as Redisson's own keys and channels do (a fencing counter, a fair lock's queue, a channel...)";
    if (!prefixOnly && key.endsWith(':timeout')) return "it ends with ':timeout', as a semaphore's lease set does";
    if (key.includes(':rwlock_timeout')) return "it holds ':rwlock_timeout', as a read-write lock's per-reader keys do";
    if (key.startsWith(OWN_KEY_PREFIX)) return `it starts with '${OWN_KEY_PREFIX}', as this library's semaphore markers (${PERMIT_MARKER_PREFIX}...) do`;
    if (key.startsWith(this.instancePrefix)) return "it is shaped like this library's instance records (keyPrefix)";
    if (!prefixOnly && key === this.instanceIndex) return "it is this library's instance index (keyPrefix)";
    const native = this.nativePrefixes.find((start) => key.startsWith(start));
    if (native !== undefined) return `it starts with '${native}', as the native layout's keys do (keyPrefix)`;
    return undefined;
  }
}
