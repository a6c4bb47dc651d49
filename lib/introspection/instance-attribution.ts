import { withTimeout } from '../redis/bounded-call';
import { isCluster } from '../redis/redis-client';
import { clientIdOf, parseInstance, type LockInstanceInfo } from '../runtime/instance-registry';
import type { InspectionSource } from './inspection-source';

export type Instances = Map<string, LockInstanceInfo>;

/**
 * Which module instance each owner an inspection lists belongs to (docs/operations.md#who-holds-what-inspect-and-list):
 * the inspect scripts read the instance hashes themselves on a standalone server or Sentinel; on a
 * cluster, whose instance keys live in other slots, unknown client ids cost one more lookup.
 */
export class InstanceAttribution {
  constructor(private readonly engine: InspectionSource) {}

  /** The scripts read instance keys themselves except on a cluster (undeclared keys in other slots). */
  scriptPrefix(): string {
    return isCluster(this.engine.client) ? '' : this.engine.instances.keyPrefix;
  }

  /** The instances of `ownerIds`: those the script read, looked up when missing on a cluster (or when `lookUp`). */
  async of(fields: unknown[], ownerIds: string[], name: string, lookUp = false): Promise<Instances> {
    const found: Instances = new Map();
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const info = parseInstance(fields[i + 1]);
      if (info) found.set(String(fields[i]), info);
    }
    const self = this.engine.instances.self;
    const missing = ownerIds.map(clientIdOf).filter((id) => !found.has(id));
    if (missing.length > 0 && (lookUp || isCluster(this.engine.client))) {
      const looked = await this.engine.call(name, () => withTimeout(this.engine.instances.lookup(missing), this.engine.options.commandTimeout));
      for (const [id, info] of looked) found.set(id, info);
    }
    // This instance knows itself, also before its registration reached Redis.
    if (ownerIds.some((id) => clientIdOf(id) === self.clientId)) found.set(self.clientId, self);
    return found;
  }
}

export function pairs(fields: readonly unknown[]): Array<[string, string]> {
  const result: Array<[string, string]> = [];
  for (let i = 0; i + 1 < fields.length; i += 2) result.push([String(fields[i]), String(fields[i + 1])]);
  return result;
}

export function withInstance<T extends { ownerId: string }>(entry: T, instances: Instances): T & { instance?: LockInstanceInfo } {
  const instance = instances.get(clientIdOf(entry.ownerId));
  return instance ? { ...entry, instance } : entry;
}
