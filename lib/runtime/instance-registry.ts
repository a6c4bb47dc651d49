import { hostname } from 'node:os';
import { withTimeout } from '../redis/bounded-call';
import { LuaScript } from '../redis/lua-script';
import { isCluster, type RedisClient } from '../redis/redis-client';

const heartbeatScript = LuaScript.named('instance-heartbeat');

/** The module instance (process) behind an owner id, as it registered itself in Redis. */
export interface LockInstanceInfo {
  /** The module instance's client id: every owner id it makes is `clientId:n`. */
  readonly clientId: string;
  /** The module's `clientName` option (default: the app's package name, else `host:pid`). */
  readonly clientName: string;
  /** The host name of its process. */
  readonly host: string;
  /** Its process id. */
  readonly pid: number;
  /** When the module instance started (ISO 8601). */
  readonly startedAt: string;
}

/**
 * Prefix of every instance key: `keyPrefix` without its trailing colons, then `.instance:`
 * (`lock.instance:{<client id>}`): beside the locks (an ACL on `lock*` covers it) without being
 * one of them (`SCAN lock:*` does not see it).
 */
export function instanceKeyPrefix(keyPrefix: string): string {
  return `${keyPrefix.replace(/:+$/, '')}.instance:`;
}

/**
 * The index of live instances: `keyPrefix` without its trailing colons, then `.instances`
 * (`lock.instances`), a sorted set client id -> alive until (ms, server clock) kept by the same
 * heartbeat as the instance hashes, so listing the live instances needs no SCAN.
 */
export function instanceIndexKey(keyPrefix: string): string {
  return `${keyPrefix.replace(/:+$/, '')}.instances`;
}

/**
 * The key of an instance's contention counters (lib/metrics/contention-stats.ts), for the lock
 * board: beside its identity (same slot), apart from it so that `inspect()` never reads them.
 */
export function contentionKeyOf(instanceKey: string): string {
  return `${instanceKey}:contention`;
}

/** The fields of an instance's identity (what `inspect()` reports of it). */
const IDENTITY_FIELDS = ['clientId', 'clientName', 'host', 'pid', 'startedAt'] as const;

/** The client id of an owner id (`clientId:n`). */
export function clientIdOf(ownerId: string): string {
  const colon = ownerId.lastIndexOf(':');
  return colon === -1 ? ownerId : ownerId.slice(0, colon);
}

/** Reads an instance hash (flat `[field, value, ...]` or an object). */
export function parseInstance(reply: unknown): LockInstanceInfo | undefined {
  let fields: Record<string, string> = {};
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) fields[String(reply[i])] = String(reply[i + 1]);
  } else if (reply && typeof reply === 'object') {
    fields = reply as Record<string, string>;
  }
  if (!fields.clientId) return undefined;
  return {
    clientId: fields.clientId,
    clientName: fields.clientName ?? '',
    host: fields.host ?? '',
    pid: Number(fields.pid),
    startedAt: fields.startedAt ?? '',
  };
}

/**
 * The module instance's identity in Redis: one small hash per instance (client id, client name,
 * host, pid, start time) whose TTL is one watchdog lease, written at bootstrap and again by every
 * watchdog round, and its member in the index of live instances (`instanceIndexKey`), moved on by
 * the same rounds to one lease past the server's clock. Nothing is written per acquisition: owner
 * ids are `clientId:n`, and `inspect` maps them to this hash. An instance that dies stops
 * refreshing both, so its identity disappears with its leases (and its index member is dropped by
 * the next heartbeat or listing that meets it); one that shuts down deletes both.
 */
export class InstanceRegistry {
  readonly self: LockInstanceInfo;
  readonly key: string;
  /** Prefix of every instance key, before `{client id}`. */
  readonly keyPrefix: string;
  /** The index of live instances (one sorted set for the key prefix). */
  readonly indexKey: string;

  constructor(
    private readonly client: RedisClient,
    keyPrefix: string,
    clientId: string,
    clientName: string,
    private readonly ttlMs: number,
    private readonly commandTimeout: number,
    /** The contention counters, written (field `contention`) when they changed since the last heartbeat. */
    private readonly contention?: { takeChanged(): string | undefined; unwritten(): void },
  ) {
    this.keyPrefix = instanceKeyPrefix(keyPrefix);
    this.key = InstanceRegistry.keyOf(this.keyPrefix, clientId);
    this.indexKey = instanceIndexKey(keyPrefix);
    this.self = { clientId, clientName, host: hostname(), pid: process.pid, startedAt: new Date().toISOString() };
  }

  static keyOf(instanceKeyPrefix: string, clientId: string): string {
    return `${instanceKeyPrefix}{${clientId}}`;
  }

  /**
   * Writes (or re-creates, after Redis lost it) the identity and re-arms its TTL, and moves its
   * index member on to one lease past the server's clock (another call: the index lives in another
   * cluster slot); true when both took.
   */
  async refresh(): Promise<boolean> {
    const { clientId, clientName, host, pid, startedAt } = this.self;
    try {
      const pipeline = this.client.multi();
      const contention = this.contention?.takeChanged();
      pipeline.hset(this.key, 'clientId', clientId, 'clientName', clientName, 'host', host, 'pid', String(pid), 'startedAt', startedAt);
      pipeline.pexpire(this.key, this.ttlMs);
      // The counters live as long as the identity: written when they changed, else kept alive.
      if (contention !== undefined) pipeline.set(contentionKeyOf(this.key), contention, 'PX', this.ttlMs);
      else if (this.contention) pipeline.pexpire(contentionKeyOf(this.key), this.ttlMs);
      const [results] = await withTimeout(Promise.all([pipeline.exec(), this.index(true)]), this.commandTimeout);
      const replies = (results ?? []) as Array<[Error | null, unknown]>;
      const written = !!results && replies.every(([error]) => !error);
      // Not written, or gone from Redis (a restart, a flush) while unchanged here: written again next time.
      if (!written || (contention === undefined && replies[2]?.[1] === 0)) this.contention?.unwritten();
      return written;
    } catch {
      this.contention?.unwritten();
      return false;
    }
  }

  /** Deletes the identity and its index member (a clean shutdown), bounded by `commandTimeout`. */
  async remove(): Promise<void> {
    await withTimeout(Promise.all([this.client.del(this.key, contentionKeyOf(this.key)), this.index(false)]), this.commandTimeout).catch(() => undefined);
  }

  private index(adding: boolean): Promise<unknown> {
    return heartbeatScript.run(this.client, [this.indexKey], [this.self.clientId, adding ? 1 : 0, this.ttlMs]);
  }

  /**
   * Identities of `clientIds` (on a cluster, where the inspect scripts cannot read them: each
   * lives in its own slot). This instance's own is known without asking.
   */
  async lookup(clientIds: Iterable<string>): Promise<Map<string, LockInstanceInfo>> {
    const found = new Map<string, LockInstanceInfo>();
    await Promise.all(
      [...new Set(clientIds)].map(async (clientId) => {
        if (clientId === this.self.clientId) {
          found.set(clientId, this.self);
          return;
        }
        // The identity fields only: whatever else an instance key may carry is not read.
        const values = await withTimeout(this.client.hmget(InstanceRegistry.keyOf(this.keyPrefix, clientId), ...IDENTITY_FIELDS), this.commandTimeout);
        const info = parseInstance(IDENTITY_FIELDS.flatMap((field, i) => (values[i] == null ? [] : [field, values[i] as string])));
        if (info) found.set(clientId, info);
      }),
    );
    return found;
  }

  /** Whether the inspect scripts may read instance keys they do not declare (not on a cluster). */
  get readableFromScripts(): boolean {
    return !isCluster(this.client);
  }
}
