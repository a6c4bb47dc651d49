import Redis from 'ioredis';

/** Server-side command calls by name (`INFO commandstats`), counting commands run inside scripts too. */
export async function commandCalls(admin: Redis): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const match of (await admin.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    calls.set(match[1], Number(match[2]));
  }
  return calls;
}

/** CPU time redis-server has used so far (user + system, main thread and others), in ms. */
export async function redisCpuMs(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1000;
}

/** The bench's own measuring commands, left out of every count. */
const MEASURING = /^(info|client\|.*|config\|.*)$/;

/** Calls between two `commandCalls` snapshots, without the bench's measuring commands. */
export function callsBetween(before: Map<string, number>, after: Map<string, number>): number {
  let total = 0;
  for (const [name, calls] of after) if (!MEASURING.test(name)) total += calls - (before.get(name) ?? 0);
  return total;
}

export interface ConnectionCount {
  /** Connections other than the bench's measuring one. */
  readonly total: number;
  /** Of those, connections in subscriber mode. */
  readonly subscribers: number;
}

export async function connectionCount(admin: Redis): Promise<ConnectionCount> {
  const lines = String(await admin.client('LIST')).trim().split('\n');
  let total = 0;
  let subscribers = 0;
  for (const line of lines) {
    if (/ name=bench-admin /.test(line)) continue;
    total += 1;
    const sub = Number(/ sub=(\d+)/.exec(line)?.[1] ?? 0) + Number(/ psub=(\d+)/.exec(line)?.[1] ?? 0) + Number(/ ssub=(\d+)/.exec(line)?.[1] ?? 0);
    if (sub > 0 || / flags=\S*P/.test(line)) subscribers += 1;
  }
  return { total, subscribers };
}

/**
 * Counts the commands this process's ioredis connections send (the round trips a library asks
 * for), skipping the bench's measuring connection. Installed once per worker process.
 */
export class SentCommands {
  private count = 0;

  static install(): SentCommands {
    const counter = new SentCommands();
    const prototype = Redis.prototype as unknown as { sendCommand(this: Redis, ...args: unknown[]): unknown };
    const original = prototype.sendCommand;
    prototype.sendCommand = function countedSendCommand(this: Redis, ...args: unknown[]) {
      if (this.options.connectionName !== 'bench-admin') counter.count += 1;
      return original.apply(this, args);
    };
    return counter;
  }

  get total(): number {
    return this.count;
  }
}
