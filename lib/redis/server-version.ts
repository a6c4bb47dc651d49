import type { Logger } from '@nestjs/common';
import { LockError } from '../errors';
import { SERVER_TOO_OLD, SERVER_VERSION_UNKNOWN } from '../lock.messages';
import { withTimeout } from './bounded-call';
import { isCluster, type RedisClient } from './redis-client';

/** A server's name and version as `INFO server` reports them. */
export interface ServerVersion {
  /** `Redis`, `Valkey`, or what `server_name` says. */
  readonly name: string;
  readonly version: string;
}

/**
 * The oldest servers the library runs on: Redis 6.2 (the scripts use `SET ... GET`), Valkey 7.2
 * (its first release), and on a cluster Redis 7.0 (release messages use sharded pub/sub,
 * SSUBSCRIBE/SPUBLISH, so they stay inside the key's shard).
 */
const OLDEST = {
  redis: { version: [6, 2], why: 'its scripts use SET ... GET' },
  redisCluster: { version: [7, 0], why: 'on a cluster it uses sharded pub/sub, SSUBSCRIBE/SPUBLISH' },
  valkey: { version: [7, 2], why: 'the first Valkey release' },
} as const;

/** The name and version in an `INFO server` reply; undefined when it names no version. */
export function parseServerInfo(info: string): ServerVersion | undefined {
  const fields = new Map<string, string>();
  // RESP3 answers INFO with a verbatim string, which may still carry its "txt:" format prefix.
  for (const line of info.replace(/^txt:/, '').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).trim());
  }
  const serverName = fields.get('server_name');
  // Valkey also reports redis_version (7.2.4, the Redis it forked from): its own version is valkey_version.
  if (serverName?.toLowerCase() === 'valkey') {
    const version = fields.get('valkey_version') ?? fields.get('redis_version');
    return version ? { name: 'Valkey', version } : undefined;
  }
  const version = fields.get('redis_version');
  return version ? { name: serverName || 'Redis', version } : undefined;
}

const atLeast = (version: string, oldest: readonly number[]): boolean => {
  const parts = version.split('.').map((part) => Number.parseInt(part, 10) || 0);
  for (let i = 0; i < oldest.length; i++) {
    if ((parts[i] ?? 0) !== oldest[i]) return (parts[i] ?? 0) > oldest[i];
  }
  return true;
};

/** Why the library cannot run on `server`, or undefined when it can. */
export function versionRefusal(server: ServerVersion, address: string, cluster: boolean): string | undefined {
  const oldest = server.name === 'Valkey' ? OLDEST.valkey : cluster ? OLDEST.redisCluster : OLDEST.redis;
  if (atLeast(server.version, oldest.version)) return undefined;
  return SERVER_TOO_OLD(address, `${server.name} ${server.version}`, `${server.name === 'Valkey' ? 'Valkey' : 'Redis'} ${oldest.version.join('.')}`, oldest.why);
}

/**
 * Checks the server's version each time the command connection becomes ready (so also after a
 * failover to another server), and holds the verdict: a server too old for the scripts is refused
 * with a message naming both versions, instead of failing each acquisition with a script error.
 */
export class ServerVersionCheck {
  /** Set while the last server checked is too old: every lock call rejects with it. */
  refusal: LockError | undefined;
  private checking: Promise<void> | undefined;

  constructor(
    private readonly client: RedisClient,
    private readonly address: string,
    private readonly timeoutMs: number,
    private readonly logger: Logger,
    /**
     * Whether the cluster's minimum applies (sharded pub/sub). Not in layout 'redisson', whose
     * publish mode follows the Java side's (its start-up probe refuses 'on' without it).
     */
    private readonly needsShardedPubSub = isCluster(client),
  ) {
    client.on('ready', this.onReady);
  }

  /**
   * At module start: once the connection is ready, checks and throws when the server is too old.
   * A connection that is not up yet is waited for at most `timeoutMs` (the application still starts
   * while Redis is unreachable: the check then runs when it connects).
   */
  async atStart(): Promise<void> {
    if (this.client.status === 'ready') this.checking ??= this.check();
    else if (this.client.status === 'connecting' || this.client.status === 'connect') await this.readyOrFailed();
    await this.checking;
    if (this.refusal) throw this.refusal;
  }

  stop(): void {
    this.client.off('ready', this.onReady);
  }

  private readonly onReady = (): void => {
    this.checking = this.check();
  };

  private readyOrFailed(): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        for (const event of ['ready', 'close', 'end'] as const) this.client.off(event, done);
        resolve();
      };
      const timer = setTimeout(done, this.timeoutMs);
      for (const event of ['ready', 'close', 'end'] as const) this.client.once(event, done);
    });
  }

  private async check(): Promise<void> {
    try {
      const info = String(await withTimeout(this.client.info('server'), this.timeoutMs));
      const server = parseServerInfo(info);
      if (!server) throw new Error('no redis_version in the reply');
      const refusal = versionRefusal(server, this.address, this.needsShardedPubSub);
      this.refusal = refusal === undefined ? undefined : new LockError(refusal);
      if (this.refusal) this.logger.error(this.refusal.message);
    } catch (error) {
      // INFO may be denied (ACL) or renamed: the scripts are then trusted as they are.
      this.logger.debug?.(SERVER_VERSION_UNKNOWN(this.address, error instanceof Error ? error.message : error));
    }
  }
}
