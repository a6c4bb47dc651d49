import type { LockEngine } from '../../runtime/lock-engine';

/** What the Redisson layout's scripts need from the engine: the publish command and the name mapper. */
export interface RedissonRuntime {
  /** `PUBLISH`, or `SPUBLISH` where the Java side's Redisson uses sharded pub/sub. */
  readonly publishCommand: string;
  /** Lock name -> Redis key, as the Java side's `NameMapper` maps it. */
  mapName(name: string): string;
}

/**
 * The engine's Redisson runtime (`engine.redisson`, decided at start by the sharded probe); until an
 * engine has one, the same decision read off the connection: sharded pub/sub exactly on a Cluster,
 * which is Redisson's AUTO on Redis 7+ (docs/redisson-interop.md#pub-sub).
 */
export function redissonRuntime(engine: LockEngine): RedissonRuntime {
  const own = (engine as unknown as { redisson?: RedissonRuntime }).redisson;
  if (own) return own;
  const map = engine.options.redisson?.nameMapper ?? ((name: string) => name);
  return { publishCommand: engine.publishCommand.toUpperCase(), mapName: map };
}
