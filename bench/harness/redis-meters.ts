import Redis from 'ioredis';
import { sleep } from './clock';

/** Server-side command calls by name (`INFO commandstats`), counting commands run inside scripts too. */
export async function commandCalls(admin: Redis): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const match of (await admin.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    calls.set(match[1], Number(match[2]));
  }
  return calls;
}

/** One command's `INFO commandstats` line: calls and the microseconds spent in them. */
export interface CommandStat {
  readonly calls: number;
  readonly usec: number;
}

/**
 * `INFO commandstats` by command name (`evalsha`, `script|load`). Commands run inside scripts are
 * counted under their own names too, and a script's `usec` includes theirs (Redis 7.0, checked:
 * bench/README.md, "Cost per operation").
 */
export async function commandStats(admin: Redis): Promise<Map<string, CommandStat>> {
  const stats = new Map<string, CommandStat>();
  for (const match of (await admin.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    stats.set(match[1], { calls: Number(match[2]), usec: Number(match[3]) });
  }
  return stats;
}

/** CPU time redis-server has used so far (user + system, main thread and others), in ms. */
export async function redisCpuMs(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  const field = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1000;
}

/** The bench's own measuring commands, left out of every count. */
export const MEASURING = /^(info|client\|.*|config\|.*)$/;

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

/** Commands `INFO commandstats` names with their subcommand (`script|load`, `client|setname`). */
const CONTAINER_COMMANDS = new Set(['script', 'client', 'config', 'cluster', 'command', 'memory', 'object', 'pubsub', 'function', 'xinfo', 'acl', 'slowlog', 'latency', 'module']);

/** A command's name in `INFO commandstats` (`evalsha`, `script|load`), from its name and first argument. */
export function statName(command: string, first: unknown): string {
  const name = command.toLowerCase();
  return CONTAINER_COMMANDS.has(name) && first !== undefined ? `${name}|${String(first).toLowerCase()}` : name;
}

/**
 * The commands clients sent while `run` ran, per commandstats name, seen by `MONITOR` (which tells a
 * client's commands from those a script runs, source `lua`): for a client outside this process,
 * whose sends `SentCommands` cannot count. MONITOR slows Redis down, so it gets a window of its own.
 */
export async function sentByMonitor<T>(admin: Redis, run: () => Promise<T>): Promise<{ result: T; sent: Map<string, number> }> {
  const sent = new Map<string, number>();
  const monitor = await admin.monitor();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua' || args.length === 0) return;
    const name = statName(String(args[0]), args[1]);
    sent.set(name, (sent.get(name) ?? 0) + 1);
  });
  try {
    const result = await run();
    // MONITOR's lines trail the replies a little.
    await sleep(100);
    return { result, sent };
  } finally {
    monitor.disconnect();
  }
}

/**
 * Counts the commands this process's ioredis connections send (the round trips a library asks
 * for), skipping the bench's measuring connection. Installed once per worker process.
 */
export class SentCommands {
  private count = 0;
  /** Per command as `INFO commandstats` names it (`evalsha`, `script|load`), when `byName` is on. */
  readonly byName = new Map<string, number>();
  /** `EVALSHA` calls per script SHA, when `byName` is on. */
  readonly bySha = new Map<string, number>();
  /** Off by default: W5 only needs the total. */
  byNameOn = false;

  static install(): SentCommands {
    const counter = new SentCommands();
    const prototype = Redis.prototype as unknown as { sendCommand(this: Redis, ...args: unknown[]): unknown };
    const original = prototype.sendCommand;
    prototype.sendCommand = function countedSendCommand(this: Redis, ...args: unknown[]) {
      if (this.options.connectionName !== 'bench-admin') {
        counter.count += 1;
        if (counter.byNameOn) counter.countByName(args[0] as { name?: string; args?: unknown[] });
      }
      return original.apply(this, args);
    };
    return counter;
  }

  get total(): number {
    return this.count;
  }

  private countByName(command: { name?: string; args?: unknown[] }): void {
    const name = String(command?.name ?? '?').toLowerCase();
    const first = command?.args?.[0];
    const key = statName(name, first);
    this.byName.set(key, (this.byName.get(key) ?? 0) + 1);
    if (name === 'evalsha') this.bySha.set(String(first), (this.bySha.get(String(first)) ?? 0) + 1);
  }

  /** Starts a new window (counts by name from now on). */
  resetByName(): void {
    this.byNameOn = true;
    this.byName.clear();
    this.bySha.clear();
  }
}
