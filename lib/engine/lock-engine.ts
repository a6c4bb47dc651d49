import { CrossProcessDeadlocks } from '../deadlocks/cross-process-check';
import { waitForGraph } from '../deadlocks/wait-for-graph';
import { Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { LockShutdownError, type LockUnavailableError } from '../errors';
import { CONNECTION_ERROR_DEBUG, CONNECTION_FAILED, SHUTDOWN_RELEASE_FAILED, SHUTDOWN_RELEASE_TIMED_OUT } from '../lock.messages';
import type { ResolvedLockOptions } from '../lock.options';
import { boundedAttempt, boundedCall, type CallTicket } from '../redis/bounded-call';
import { LockKeys } from '../redis/lock-keys';
import { LuaScript } from '../redis/lua-script';
import { closeConnection, isCluster, type RedisClient } from '../redis/redis-client';
import { ServerVersionCheck } from '../redis/server-version';
import { connectionFor, describeAddress, duplicateForSubscriber } from './connections';
import type { EngineSeam } from './engine-seam';
import { WAKE_ONE } from '../redis/unlock-messages';
import { UnlockSubscriber } from '../redis/unlock-subscriber';
import { HeldLocks } from '../runtime/hold-registry';
import { InFlight } from '../runtime/in-flight';
import { OwnerContext } from '../runtime/owner-context';
import { OwnerIds } from '../runtime/owner-ids';
import { REDLOCK_CONNECTION_DEFAULTS, RedLockMasters } from '../runtime/redlock-masters';
import { Watchdog } from '../runtime/watchdog';
import { InstanceRegistry } from '../runtime/instance-registry';
import { LockTelemetry } from '../metrics/lock-telemetry';
import { ContentionStats } from '../metrics/contention-stats';
import { RedissonRuntime } from '../layouts/redisson-runtime';

/** How long a release's outcome is kept for a resent release (ioredis replays after a reconnect). */
const RELEASE_RECORD_TTL_MS = 10_000;
/**
 * The fence key's margin, in ms: a name's last fencing token is kept only until the server clock
 * (microseconds) passes it, which a token taken from the clock does at once, plus this (the script's
 * own run time, a replica's clock a little behind after a failover). Beyond that, tokens keep growing
 * with the clock (lua/include/fence-token.lua, docs/architecture.md#fencing-tokens).
 */
const FENCE_MEMORY_MS = 1_000;

/** The scripts every lock kind uses, loaded once per process. */
function loadScripts() {
  return {
    reentrantAcquire: LuaScript.named('reentrant-acquire'),
    reentrantFirstAttempt: LuaScript.named('reentrant-first-attempt'),
    reentrantRelease: LuaScript.named('reentrant-release'),
    reentrantRenew: LuaScript.named('reentrant-renew'),
  };
}

/**
 * Everything one LockModule instance shares between its lock services: connections, the
 * subscriber, the owner context, the hold registry and its watchdog. Internal.
 */
export class LockEngine implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly logger = new Logger('LockModule');
  readonly client: RedisClient;
  readonly keys: LockKeys;
  readonly ids = new OwnerIds();
  readonly holds = new HeldLocks();
  readonly ownerContext = new OwnerContext(this.holds, this);
  /** The cross-process side of deadlock detection (docs/deadlocks.md). */
  readonly deadlocks = new CrossProcessDeadlocks(this);
  /** Releases that `run` sent without waiting for their answer; shutdown waits for them. */
  readonly releasesInFlight = new InFlight();
  /** Bodies running under a lock (`run`, the decorators); shutdown gives them `shutdownTimeout` to end. */
  readonly runningBodies = new InFlight();
  readonly watchdog: Watchdog;
  readonly scripts = loadScripts();
  /** Sharded pub/sub on a cluster keeps a release message inside its shard. */
  readonly publishCommand: 'publish' | 'spublish';
  readonly releaseRecordTtlMs = RELEASE_RECORD_TTL_MS;
  readonly wakeMessageOnForceUnlock = WAKE_ONE;
  readonly fenceMemoryMs = FENCE_MEMORY_MS;
  /** The independent masters of `redlock.clients`, when configured. */
  readonly redlockMasters: RedLockMasters | undefined;
  /**
   * OpenTelemetry instruments from the global API, taken when the module starts (so an SDK
   * registered in main.ts is used); undefined when no SDK is registered: then nothing is measured.
   */
  readonly telemetry: LockTelemetry | undefined;
  /** This instance's identity in Redis, for `inspect` (refreshed by the watchdog's rounds). */
  readonly instances: InstanceRegistry;
  /** Per-name waits, timeouts and skips, written beside the identity for the lock board. */
  readonly contention = new ContentionStats();
  /** Refuses a server too old for the scripts (at start when it is reachable, else once it is). */
  readonly serverVersion: ServerVersionCheck;
  /** `layout: 'redisson'`: the Java side's name mapper and publish mode (docs/redisson-interop.md). */
  readonly redisson: RedissonRuntime | undefined;

  private readonly ownsClient: boolean;
  /** Made on first use: in the Redisson layout on a cluster its kind waits for the start's probe. */
  private subscriberParts: { connection: RedisClient; subscriber: UnlockSubscriber } | undefined;
  private shutdownStarted = false;
  private shutdownReleaseStarted = false;
  /** The connection failure was logged; quiet until the connection is ready again. */
  private connectionFailureLogged = false;

  constructor(
    readonly options: ResolvedLockOptions,
    /** Testing kit only: in-memory connections instead of the network (see engine-seam.ts). */
    seam?: EngineSeam,
  ) {
    const connect = seam?.connect ?? connectionFor;
    const { client, owned } = connect(options.redis, 'lock-commands');
    this.client = client;
    this.ownsClient = owned;
    this.serverVersion = new ServerVersionCheck(
      client,
      describeAddress(client),
      options.commandTimeout,
      this.logger,
      isCluster(client) && options.layout === 'native',
    );
    if (owned) {
      client.on('error', (error: Error) => this.connectionFailed(error));
      client.on('ready', () => (this.connectionFailureLogged = false));
    }
    this.publishCommand = isCluster(client) ? 'spublish' : 'publish';
    this.redisson = options.redisson && new RedissonRuntime(client, options.redisson, options.commandTimeout, options.keyPrefix);
    // Waiters that could not reach Redis retry the moment the command connection is back.
    client.on('ready', this.wakeWaiters);
    this.keys = new LockKeys(options.keyPrefix, options.maxNameLength);
    this.watchdog = new Watchdog(this.holds, Math.floor(options.watchdogTimeout / 3), options.commandTimeout, this.logger);
    const telemetry = LockTelemetry.start({ lockNames: options.telemetryLockNames });
    this.telemetry = seam?.telemetry ? seam.telemetry(telemetry) : telemetry;
    this.instances = new InstanceRegistry(
      client,
      options.keyPrefix,
      this.ids.clientId,
      options.clientName,
      options.watchdogTimeout,
      options.commandTimeout,
      this.contention,
    );
    const { redlock } = options;
    this.redlockMasters =
      redlock &&
      new RedLockMasters(
        redlock.clients.map((option, i) => connect(option, `lock-redlock-${i}`, REDLOCK_CONNECTION_DEFAULTS)),
        redlock.masterTimeout,
        this.logger,
      );
  }

  /**
   * One Redis call on behalf of lock `lockName`, bounded by `commandTimeout`: settles in time
   * whatever Redis does, and any Redis failure becomes a `LockUnavailableError`.
   */
  call<T>(lockName: string | readonly string[], work: (ticket: CallTicket) => Promise<T>): Promise<T> {
    if (this.serverVersion.refusal) return Promise.reject(this.serverVersion.refusal);
    if (this.redisson && !this.redisson.decided) return this.redisson.ready().then(() => this.call(lockName, work));
    return boundedCall(lockName, this.options.commandTimeout, work);
  }

  /** `call` for an acquisition attempt: "Redis could not be asked" resolves as a `LockUnavailableError`. */
  attempt<T>(lockName: string | readonly string[], work: (ticket: CallTicket) => Promise<T>): Promise<T | LockUnavailableError> {
    if (this.serverVersion.refusal) return Promise.reject(this.serverVersion.refusal);
    if (this.redisson && !this.redisson.decided) return this.redisson.ready().then(() => this.attempt(lockName, work));
    return boundedAttempt(lockName, this.options.commandTimeout, work);
  }

  /** Shutdown began: no new acquisition is granted, running bodies were told (their signals aborted). */
  get shuttingDown(): boolean {
    return this.shutdownStarted;
  }

  /**
   * The bodies' time is up: shutdown releases every hold this instance still records and closes the
   * connections, so a locked call whose body settles after that has nothing left to release itself.
   */
  get releasingAtShutdown(): boolean {
    return this.shutdownReleaseStarted;
  }

  /** The subscriber connection's state (ioredis `status`: `ready`, `connecting`, `wait` before first use...). */
  get subscriberStatus(): string {
    return this.subscriberParts?.connection.status ?? 'wait';
  }

  /** The one subscriber connection (made on first use; see `subscriberParts`). */
  get subscriber(): UnlockSubscriber {
    if (!this.subscriberParts) {
      const sharded = this.redisson ? this.redisson.sharded : isCluster(this.client);
      const connection = duplicateForSubscriber(this.client, sharded);
      this.subscriberParts = { connection, subscriber: new UnlockSubscriber(connection, sharded) };
    }
    return this.subscriberParts.subscriber;
  }

  /**
   * Connects the connection the library opened once every module is initialised (and validated),
   * and fails the start on a server too old for the scripts (closing what it opened).
   */
  async onApplicationBootstrap(): Promise<void> {
    if (this.ownsClient && this.client.status === 'wait') {
      // The 'error' event names the address and the cause; connect()'s rejection only says it closed.
      this.client.connect().catch((error: Error) => this.logger.debug?.(CONNECTION_ERROR_DEBUG('commands', error.message)));
    }
    this.redlockMasters?.connect();
    try {
      if (this.redisson) {
        await this.redisson.ready();
        this.redisson.logStart(this.logger, this.options.keyPrefix);
      }
      await this.serverVersion.atStart();
      // Two redlock.clients entries reaching one server fail the start (a master down now is checked before its first vote).
      await this.redlockMasters?.identify(this.redlockMasters.masterTimeout(this.options.watchdogTimeout), { evenIfDown: true });
    } catch (error) {
      await this.onApplicationShutdown();
      throw error;
    }
    waitForGraph.addEngine(this);
    // Registered once, then kept alive by every watchdog round (nothing is written per acquisition).
    void this.instances.refresh();
    this.watchdog.startHeartbeat(() => this.instances.refresh());
  }

  /**
   * Cancel waits; tell running bodies (their signals abort with `LockShutdownError`) and give them
   * up to `shutdownTimeout` to end, their locks still renewed meanwhile; then stop renewing, release
   * what this instance still holds and close what it opened. So a rolling deploy never lets another
   * replica start a job while this one's body runs unaware. Bounded by `shutdownTimeout` plus
   * about one `commandTimeout`.
   */
  async onApplicationShutdown(): Promise<void> {
    if (this.shutdownStarted) return;
    this.shutdownStarted = true;
    waitForGraph.removeEngine(this);
    this.client.off('ready', this.wakeWaiters);
    this.serverVersion.stop();
    this.subscriberParts?.subscriber.close(new LockShutdownError());
    this.redlockMasters?.cancelWaits(new LockShutdownError());
    for (const hold of this.holds.all()) hold.abort(new LockShutdownError(hold.name));
    await this.runningBodies.settle(this.options.shutdownTimeout);
    this.shutdownReleaseStarted = true;
    this.watchdog.stop();
    // All bounded by commandTimeout, side by side: shutdown takes about one, whatever Redis does.
    // The releases `run` sent without waiting go first on the connection, so they are not undone.
    await Promise.all([
      this.releasesInFlight.settle(this.options.commandTimeout),
      this.releaseHeldLocks(),
      this.instances.remove(),
    ]);
    await Promise.all([
      this.subscriberParts ? closeConnection(this.subscriberParts.connection) : Promise.resolve(),
      this.ownsClient ? closeConnection(this.client) : Promise.resolve(),
      this.redlockMasters?.close(),
    ]);
  }

  private readonly wakeWaiters = (): void => this.subscriberParts?.subscriber.wakeAll();

  /** Logs the first failure of a connection the library opened, with its address and cause. */
  private connectionFailed(error: Error): void {
    if (this.connectionFailureLogged) {
      this.logger.debug?.(CONNECTION_ERROR_DEBUG('commands', error.message));
      return;
    }
    this.connectionFailureLogged = true;
    this.logger.warn(CONNECTION_FAILED(describeAddress(this.client), error.message));
  }

  private async releaseHeldLocks(): Promise<void> {
    const holds = this.holds.all();
    if (holds.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const releases = holds.map(async (hold) => {
      this.holds.forget(hold);
      for (let i = 0; i < hold.holdCount; i++) if ((await hold.releaseOne()) !== 0) break;
    });
    try {
      await Promise.race([
        Promise.all(releases),
        new Promise((_, reject) => {
          const budget = this.options.commandTimeout;
          timer = setTimeout(() => reject(new Error(SHUTDOWN_RELEASE_TIMED_OUT(budget))), budget);
        }),
      ]);
    } catch (error) {
      this.logger.warn(SHUTDOWN_RELEASE_FAILED(error instanceof Error ? error.message : error));
    } finally {
      clearTimeout(timer);
    }
  }
}
