import type { RedisOptions } from 'ioredis';
import type { RedisConnectionOption } from '../lock.options';
import type { LockTelemetry } from '../metrics/lock-telemetry';
import type { RedisClient } from '../redis/redis-client';

/** Opens the connection for one configured Redis (`redis`, or one of `redlock.clients`). */
export type ConnectionFactory = (
  option: RedisConnectionOption,
  connectionName: string,
  defaults?: RedisOptions,
) => { client: RedisClient; owned: boolean };

/**
 * What a `LockEngine` takes from the outside world, replaceable as a whole: the testing kit
 * (`nestjs-redis-locks/testing`) gives in-memory connections that run the same Lua scripts, and
 * records every acquisition through the telemetry hook. Everything above the connections (waiting,
 * watchdog, fencing, decorators) stays the same code. Internal.
 */
export interface EngineSeam {
  readonly connect: ConnectionFactory;
  /** Wraps the telemetry the engine would use (undefined when no OpenTelemetry SDK is registered). */
  readonly telemetry?: (telemetry: LockTelemetry | undefined) => LockTelemetry | undefined;
}

/** Provider token of an `EngineSeam`; absent in a `LockModule` (real connections). */
export const LOCK_ENGINE_SEAM = Symbol('LOCK_ENGINE_SEAM');
