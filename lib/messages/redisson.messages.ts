// Texts of the Redisson layout's errors and log lines (docs/redisson-interop.md).

const show = (value: unknown): string => {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
};

export const REDISSON_WITHOUT_LAYOUT = `LockModule option "redisson" applies only with layout 'redisson' (got layout 'native'): add layout: 'redisson'`;

export const REDISSON_DEADLOCK_CHECK = (value: unknown): string =>
  `LockModule option "deadlockCheckAfter" must be 0 or unset with layout 'redisson': cross-process deadlock detection needs wait-for records that Java holders do not keep (in-process detection stays on) (got ${show(value)})`;

export const REDISSON_MAPPER_THREW = (probe: string, message: string): string =>
  `LockModule option "redisson.nameMapper" threw for the lock name "${probe}": ${message}. It runs on every lock name and must not throw`;

export const REDISSON_MAPPER_RESULT = (probe: string, first: unknown, second: unknown): string =>
  `LockModule option "redisson.nameMapper" returned ${show(first)}${first === second ? '' : ` then ${show(second)}`} for "${probe}": it must return a non-empty string, the same one every time`;

export const REDISSON_MAPPER_FAILED_FOR = (name: string, message: string): string =>
  `lock "${name.slice(0, 200)}": redisson.nameMapper failed: ${message}`;

export const REDISSON_SHARDED_ON_STANDALONE = `LockModule option "redisson.shardedSubscription" is 'on', but the connection is not a Redis Cluster: Redisson uses sharded pub/sub only in cluster mode. Use 'auto' or 'off'`;

export const REDISSON_PROBE_INCONCLUSIVE = (nodes: string, node: string, cause: string): string =>
  `layout 'redisson' on the Redis Cluster ${nodes}: could not tell whether Redisson uses sharded pub/sub (PUBSUB SHARDNUMSUB on ${node}: ${cause}). Set redisson.shardedSubscription to 'on' or 'off', as the Java services' Redisson resolved its shardedSubscriptionMode (AUTO means 'on' on Redis/Valkey 7.0+)`;

export const REDISSON_PROBE_DISAGREE = (works: string, fails: string, cause: string): string =>
  `layout 'redisson': the cluster's masters disagree on sharded pub/sub (works on ${works}, fails on ${fails}: ${cause}), so Redisson's AUTO would depend on the node it reached first. Set redisson.shardedSubscription to 'on' or 'off'`;

export const REDISSON_SHARDED_NEEDS_7 = (node: string, cause: string): string =>
  `layout 'redisson': redisson.shardedSubscription 'on' needs Redis or Valkey 7.0+ on every master (${node} refused PUBSUB SHARDNUMSUB: ${cause})`;

export const REDISSON_LAYOUT_STARTED = (publish: string, how: string, keyPrefix: string): string =>
  `layout 'redisson': lock keys are Redisson's (mapped names), wake messages go by ${publish} (${how}); keyPrefix '${keyPrefix}' names only this library's own records`;

export const REDISSON_KIND_NOT_AVAILABLE = (kind: string, name: string): string =>
  `lock "${name.slice(0, 200)}": ${kind} is not available in layout 'redisson' yet (docs/redisson-interop.md#what-is-supported)`;

export const REDISSON_NO_TOKEN = (call: string): string =>
  `${call}({ fencingToken }) needs fencing tokens stored with each hold, which layout 'redisson' does not keep: call it without a token`;

/**
 * A string key template in this layout without a constant prefix (and no nameMapper), or one whose
 * prefix every name would be refused for: a bootstrap error naming the method, the template and the fix.
 */
export const REDISSON_TEMPLATE_NEEDS_PREFIX = (decorator: string, method: string, template: string, why: string | undefined): string =>
  `${decorator} on ${method}: key template ${show(template)} ${why === undefined ? 'starts with a placeholder' : `cannot make a lock name: every name it makes is refused (${why})`}. ` +
  "In layout 'redisson' a lock name is a bare Redis key, so a request value must not choose the whole key: " +
  "start the template with a constant prefix that no other key of this Redis uses (such as 'order:#id'), " +
  'or map names with the module option redisson.nameMapper (the Java side must set the same NameMapper)';

export const REDISSON_BAD_CLUSTER_NAME = (name: string, mapped: string): string =>
  `lock name "${name.slice(0, 200)}" maps to "${mapped.slice(0, 200)}", which has a '{' but no hash tag: Redisson's keys of it would land in different cluster slots`;

export const REDISSON_REUSED_AS_READ_WRITE = (name: string): string =>
  `lock "${name.slice(0, 200)}": its key holds a plain lock; in layout 'redisson' a plain and a read-write lock of one name share it (use one kind per name)`;

export const REDISSON_BOARD_FORCE_RELEASE = `LockBoardModule option "allowForceRelease" needs fencing tokens stored with each hold, which layout 'redisson' does not have: leave it off`;

/** A mapped name shaped like a key of another structure (`RedissonNameRules`): a 400, naming the rule. */
export const REDISSON_NAME_REFUSED = (name: string, mapped: string, why: string): string =>
  `lock name ${show(name.slice(0, 200))}${mapped === name ? '' : ` (mapped to ${show(mapped.slice(0, 200))})`} is refused in layout 'redisson', where a name is a bare Redis key: ${why}. ` +
  'Give the lock a name no other structure uses (a key template with a constant prefix, such as \'order:#id\')';
