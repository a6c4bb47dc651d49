import calculateSlot from 'cluster-key-slot';
import { isCluster, type RedisClient } from './redis-client';

/**
 * Which scripts a connection's server already has in its script cache, as far as this process
 * knows: a script is sent as EVALSHA only where it ran before, and as EVAL (which also caches it)
 * the first time. So no call has to come back with NOSCRIPT and be sent again after the commands
 * that followed it: every script runs in the order it was written on the connection, which a
 * release that `run` does not wait for relies on (see `docs/architecture.md#one-round-trip`).
 *
 * On a cluster each master has its own cache: known per hash slot. After a reconnect (a restarted
 * server starts empty) a connection knows nothing again. A cache emptied without a reconnect
 * (SCRIPT FLUSH, a slot moved to another master) still answers NOSCRIPT once, and the call is sent
 * again as EVAL, as before.
 */
export class KnownScripts {
  private static readonly byClient = new WeakMap<RedisClient, KnownScripts>();

  /** Script SHA -> the slots where the server has it (standalone: slot 0). */
  private readonly known = new Map<string, Set<number>>();
  private readonly cluster: boolean;

  private constructor(client: RedisClient) {
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

  add(sha: string, keys: readonly string[]): void {
    let slots = this.known.get(sha);
    if (!slots) this.known.set(sha, (slots = new Set()));
    slots.add(this.slotOf(keys));
  }

  delete(sha: string, keys: readonly string[]): void {
    this.known.get(sha)?.delete(this.slotOf(keys));
  }

  private slotOf(keys: readonly string[]): number {
    return this.cluster && keys.length > 0 ? calculateSlot(keys[0]) : 0;
  }
}
