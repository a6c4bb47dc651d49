import calculateSlot from 'cluster-key-slot';
import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from './redis-client';

/** Where a standalone connection's scripts are kept (a cluster's are kept per master). */
const STANDALONE = '';

/**
 * Which scripts a connection's server already has, loaded with `SCRIPT LOAD`, as far as this process
 * knows. A script unknown there is loaded (`SCRIPT LOAD`, written just before its `EVALSHA` on the
 * same connection, so still one round trip) and then run by SHA. Scripts are never sent as `EVAL`:
 * Redis 7.4+ evicts `EVAL`-loaded scripts beyond 500 (another client's scripts count too), and an
 * evicted release would come back NOSCRIPT and be resent after the commands that followed it (see
 * `docs/architecture.md#one-round-trip`). `SCRIPT LOAD`ed scripts are never evicted.
 *
 * On a cluster each master has its own cache: a script is loaded on the master that owns the key's
 * slot, through that master's connection (which the cluster's `EVALSHA` uses next), and known per
 * master. After a lost connection (a restarted server starts empty, a failover's new master never
 * had them) the connection knows nothing again; a NOSCRIPT (SCRIPT FLUSH) forgets everything the server
 * was thought to have.
 */
export class KnownScripts {
  private static readonly byClient = new WeakMap<RedisClient, KnownScripts>();

  /** Master (`host:port`; standalone: '') -> the SHAs of the scripts it has. */
  private readonly known = new Map<string, Set<string>>();
  /** The masters whose `close` already clears what is known of them. */
  private readonly watchedMasters = new WeakSet<Redis>();
  private readonly cluster: (RedisClient & { slots?: string[][]; nodes(role: 'master'): Redis[] }) | undefined;

  private constructor(private readonly client: RedisClient) {
    this.cluster = isCluster(client) ? (client as KnownScripts['cluster']) : undefined;
    // A lost connection may come back to a restarted (empty) server or a new master. Forgotten when
    // it closes, not when it is ready: commands written meanwhile wait in the offline queue behind
    // their SCRIPT LOAD, and the first `ready` (after the first load, on a fresh connection) must
    // not make a script load twice.
    client.on('close', () => this.known.clear());
  }

  static of(client: RedisClient): KnownScripts {
    let scripts = KnownScripts.byClient.get(client);
    if (!scripts) {
      scripts = new KnownScripts(client);
      KnownScripts.byClient.set(client, scripts);
    }
    return scripts;
  }

  has(sha: string, keys: readonly string[]): boolean {
    const master = this.masterKeyOf(keys);
    return master !== undefined && this.known.get(master)?.has(sha) === true;
  }

  /**
   * Writes `SCRIPT LOAD source` to the connection that will run the script for `keys`, and counts it
   * known there from now on: commands written after it on that connection find it. False when no
   * such connection is known yet (a cluster still discovering its slots): the caller sends `EVAL`
   * this once, and loads it on a later call.
   */
  load(sha: string, source: string, keys: readonly string[]): boolean {
    const master = this.masterKeyOf(keys);
    if (master === undefined) return false;
    const connection = this.cluster ? this.masterConnection(master) : (this.client as Redis);
    if (!connection) return false;
    let shas = this.known.get(master);
    if (!shas) this.known.set(master, (shas = new Set()));
    shas.add(sha);
    // A load that failed (connection lost) is forgotten, so the next call loads again; the EVALSHA
    // written after it fails the same way and reports the error.
    connection.script('LOAD', source).catch(() => this.known.get(master)?.delete(sha));
    return true;
  }

  /** The server answered NOSCRIPT: its cache was emptied, so every script is loaded again. */
  forgetAll(): void {
    this.known.clear();
  }

  /**
   * Which master runs a script on `keys` (`host:port`, standalone ''); undefined while a cluster does
   * not know, or for a script without keys (a cluster sends it to any node).
   */
  private masterKeyOf(keys: readonly string[]): string | undefined {
    if (!this.cluster) return STANDALONE;
    return keys.length > 0 ? this.cluster.slots?.[calculateSlot(keys[0])]?.[0] : undefined;
  }

  /** The cluster's connection to `master` (the one it sends that master's commands to). */
  private masterConnection(master: string): Redis | undefined {
    const connection = this.cluster?.nodes('master').find((node) => `${node.options.host}:${node.options.port}` === master);
    if (connection && !this.watchedMasters.has(connection)) {
      // A master whose connection is lost may come back restarted (empty): the cluster's own events
      // do not tell.
      this.watchedMasters.add(connection);
      connection.on('close', () => this.known.delete(master));
    }
    return connection;
  }
}
