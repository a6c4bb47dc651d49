import type { CallTicket } from '../redis/bounded-call';
import type { LockKeys } from '../redis/lock-keys';
import type { RedisClient } from '../redis/redis-client';
import type { InstanceRegistry } from '../runtime/instance-registry';
import type { RedissonRuntime } from '../layouts/redisson-runtime';

/**
 * The little the inspector reads from the module's engine (which satisfies it as is): the inspector
 * sits above the engine and the engine knows nothing of it.
 */
export interface InspectionSource {
  readonly client: RedisClient;
  readonly keys: LockKeys;
  readonly instances: InstanceRegistry;
  /** Layout 'redisson': the locks are Redisson's keys (docs/redisson-interop.md#introspection). */
  readonly redisson?: RedissonRuntime | undefined;
  readonly options: { readonly keyPrefix: string; readonly commandTimeout: number; readonly maxNameLength: number };
  /** One Redis call bounded by `commandTimeout`, a failure becoming a `LockUnavailableError`. */
  call<T>(lockName: string | readonly string[], work: (ticket: CallTicket) => Promise<T>): Promise<T>;
}
