import type { Logger } from '@nestjs/common';
import { InvalidLockNameError, LockError } from '../errors';
import { isCluster, type RedisClient } from '../redis/redis-client';
import type { ResolvedRedissonOptions } from '../layout.options';
import { RedissonNameRules } from './redisson-name-rules';
import {
  REDISSON_BAD_CLUSTER_NAME,
  REDISSON_NAME_REFUSED,
  REDISSON_LAYOUT_STARTED,
  REDISSON_MAPPER_FAILED_FOR,
  REDISSON_SHARDED_ON_STANDALONE,
} from '../messages/redisson.messages';
import { probeShardedPubSub } from './sharded-probe';

/**
 * What one module instance in `layout: 'redisson'` shares between its locks: the name mapper, and
 * whether wake messages go by PUBLISH or SPUBLISH, decided as the Java side's Redisson decides it
 * (docs/redisson-interop.md#sharded-pub-sub). On a Cluster with `shardedSubscription: 'auto'` that
 * takes a probe of every master: until it answered (at start), lock calls wait for it.
 */
export class RedissonRuntime {
  /** Sharded pub/sub (SPUBLISH/SSUBSCRIBE), once decided; undefined while the probe runs. */
  private shardedMode: boolean | undefined;
  private probing: Promise<void> | undefined;
  private readonly cluster: boolean;
  /** The shapes a mapped name may not have (Redisson's derived keys, this library's records). */
  readonly nameRules: RedissonNameRules;

  constructor(
    private readonly client: RedisClient,
    readonly options: ResolvedRedissonOptions,
    private readonly commandTimeout: number,
    /** The module's `keyPrefix`: it names this library's own records, which no lock name may reach. */
    keyPrefix = 'lock:',
  ) {
    this.cluster = isCluster(client);
    this.nameRules = new RedissonNameRules(keyPrefix);
    const { shardedSubscription } = options;
    if (!this.cluster) {
      if (shardedSubscription === 'on') throw new Error(REDISSON_SHARDED_ON_STANDALONE);
      this.shardedMode = false;
    } else if (shardedSubscription === 'off') {
      this.shardedMode = false;
    }
  }

  /** Whether sharded pub/sub is already decided without asking Redis (everything but a Cluster on 'auto'/'on'). */
  get decided(): boolean {
    return this.shardedMode !== undefined;
  }

  get sharded(): boolean {
    if (this.shardedMode === undefined) throw new LockError("layout 'redisson': used before the module started");
    return this.shardedMode;
  }

  /** Redisson's publish command (it passes the same word to its scripts). */
  get publishCommand(): 'PUBLISH' | 'SPUBLISH' {
    return this.sharded ? 'SPUBLISH' : 'PUBLISH';
  }

  /** Resolves once the publish mode is known (the probe runs once; a failed probe rejects every caller). */
  ready(): Promise<void> {
    if (this.shardedMode !== undefined) return Promise.resolve();
    this.probing ??= probeShardedPubSub(this.client as never, this.commandTimeout, this.options.shardedSubscription as 'auto' | 'on').then(
      (sharded) => {
        this.shardedMode = sharded;
      },
    );
    return this.probing;
  }

  /** The start's one line: layout, publish mode and how it was decided. */
  logStart(logger: Logger, keyPrefix: string): void {
    const how = !this.cluster ? 'not a cluster' : this.options.shardedSubscription === 'auto' ? 'probed every master' : `shardedSubscription '${this.options.shardedSubscription}'`;
    logger.log(REDISSON_LAYOUT_STARTED(this.publishCommand, how, keyPrefix));
  }

  /**
   * The Redis key of lock `name`: the Java side's mapped name. A mapper failure names the lock. A
   * mapped name shaped like another structure's key (Redisson's derived keys, this library's own
   * records: `RedissonNameRules`) is refused with `InvalidLockNameError` (400), in every kind.
   */
  mapName(name: string): string {
    let mapped: unknown;
    try {
      mapped = this.options.nameMapper(name);
    } catch (error) {
      throw new LockError(REDISSON_MAPPER_FAILED_FOR(name, error instanceof Error ? error.message : String(error)));
    }
    if (typeof mapped !== 'string' || mapped === '') throw new LockError(REDISSON_MAPPER_FAILED_FOR(name, `it returned ${typeof mapped === 'string' ? 'an empty string' : typeof mapped}`));
    // A '{' without a hash tag: Redisson's own keys of the name would hash to different slots.
    if (this.cluster && mapped.includes('{') && !hasHashTag(mapped)) {
      throw new InvalidLockNameError(name, REDISSON_BAD_CLUSTER_NAME(name, mapped));
    }
    const refusal = this.nameRules.refusal(mapped);
    if (refusal !== undefined) throw new InvalidLockNameError(name, REDISSON_NAME_REFUSED(name, mapped, refusal));
    return mapped;
  }
}

/** Redis Cluster's rule: the key's first '{' and the first '}' after it enclose at least one character. */
function hasHashTag(key: string): boolean {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1;
}
