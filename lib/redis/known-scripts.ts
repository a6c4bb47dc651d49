import calculateSlot from 'cluster-key-slot';
import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from './redis-client';

/**
 * Which scripts a connection's server already has, loaded with `SCRIPT LOAD`, as far as this process
 * knows. A script unknown there is loaded (`SCRIPT LOAD`, written just before its `EVALSHA` on the
 * same connection, so still one round trip) and then run by SHA. Scripts are never sent as `EVAL`:
 * Redis 7.4+ evicts `EVAL`-loaded scripts beyond 500 (another client's scripts count too), and an
 * evicted release would come back NOSCRIPT and be resent after the commands that followed it (see
 * `docs/architecture.md#one-round-trip`). `SCRIPT LOAD`ed scripts are never evicted.
 *
 * On a cluster each master has its own cache: a script is loaded on the master that owns the slot
 * (through that master's connection, which the cluster's `EVALSHA` uses next), and known per slot.
 * After a reconnect (a restarted server starts empty, a failover's new master never had them) the
 * connection knows nothing again; a NOSCRIPT (SCRIPT FLUSH) forgets everything the server was
 * thought to have.
 */
export class KnownScripts {
  private static readonly byClient = new WeakMap<RedisClient, KnownScripts>();
  /** A cluster's masters whose `ready` already clears their cluster's knowledge. */
  private static readonly watchedNodes = new WeakSet<Redis>();

  /** Script SHA -> the slots where the server has it (standalone: slot 0). */
  private readonly known = new Map<string, Set<number>>();
  private readonly cluster: boolean;

  private constructor(private readonly client: RedisClient) {
    this.cluster = isCluster(client);
    client.on('ready', () => this.known.clear());
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
    return this.known.get(sha)?.has(this.slotOf(keys)) === true;
  }

  /**
   * Writes `SCRIPT LOAD source` to the connection that will run the script for `keys`, and counts it
   * known there from now on: commands written after it on that connection find it. False when no
   * such connection is known yet (a cluster still discovering its slots): the caller sends `EVAL`
   * this once, and loads it on a later call.
   */
  load(sha: string, source: string, keys: readonly string[]): boolean {
    const slot = this.slotOf(keys);
    const connection = this.cluster ? this.masterOf(slot) : (this.client as Redis);
    if (!connection) return false;
    let slots = this.known.get(sha);
    if (!slots) this.known.set(sha, (slots = new Set()));
    slots.add(slot);
    // A load that failed (connection lost) is forgotten, so the next call loads again; the EVALSHA
    // written after it fails the same way and reports the error.
    connection.script('LOAD', source).catch(() => this.known.get(sha)?.delete(slot));
    return true;
  }

  /** The server answered NOSCRIPT: its cache was emptied, so every script is loaded again. */
  forgetAll(): void {
    this.known.clear();
  }

  private slotOf(keys: readonly string[]): number {
    return this.cluster && keys.length > 0 ? calculateSlot(keys[0]) : 0;
  }

  /** The connection of the master owning `slot` (the one the cluster sends that slot's commands to). */
  private masterOf(slot: number): Redis | undefined {
    const cluster = this.client as RedisClient & { slots?: string[][]; nodes(role: 'master'): Redis[] };
    const nodeKey = cluster.slots?.[slot]?.[0];
    if (!nodeKey) return undefined;
    const master = cluster.nodes('master').find((node) => `${node.options.host}:${node.options.port}` === nodeKey);
    if (master && !KnownScripts.watchedNodes.has(master)) {
      // A master that reconnects (restarted, failed over) lost its scripts: the cluster's own
      // `ready` comes only once.
      KnownScripts.watchedNodes.add(master);
      master.on('ready', () => this.known.clear());
    }
    return master;
  }
}
