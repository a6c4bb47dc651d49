import type Redis from 'ioredis';
import { randomUUID } from 'node:crypto';
import { waitFor } from './wait-for';

/**
 * The commands one Redis server runs, in the order it runs them, as MONITOR reports them: lets a
 * test wait for what the library did (a waiter's second attempt, a renewal round) instead of
 * sleeping and hoping it happened, and tell what ran before or after a point (`mark`).
 */
export class CommandMonitor {
  private readonly seen: string[][] = [];

  private constructor(private readonly connection: Redis) {
    connection.on('monitor', (_time: string, args: string[]) => this.seen.push(args));
    // ioredis 6 may report a MONITOR line that arrives as the connection closes (or between its
    // own bookkeeping steps) as "Command queue state error": an unhandled 'error' event would fail
    // whichever test runs then. A line this monitor misses shows as a count that never comes.
    connection.on('error', () => undefined);
  }

  /**
   * Starts monitoring the server `client` talks to (on a connection of its own). The connection is
   * made here rather than by `client.monitor()`, so the listeners are on it before its first line:
   * `monitor()` resolves a microtask after the 'monitoring' event, and a line that came in the same
   * chunk as MONITOR's OK was reported as an unhandled "Command queue state error" meanwhile.
   */
  static async start(client: Redis): Promise<CommandMonitor> {
    const connection = client.duplicate({ monitor: true, lazyConnect: false } as never);
    const monitor = new CommandMonitor(connection);
    await new Promise<void>((resolve, reject) => {
      connection.once('monitoring', () => resolve());
      connection.once('end', () => reject(new Error('the MONITOR connection closed before monitoring')));
    });
    return monitor;
  }

  /**
   * How many commands seen so far match (`args[0]` is the command name as sent), counting only
   * those between the marks `from` and `to` when given.
   */
  count(match: (args: readonly string[]) => boolean, { from = 0, to = Number.POSITIVE_INFINITY }: { from?: number; to?: number } = {}): number {
    let count = 0;
    for (let i = from; i < Math.min(to, this.seen.length); i++) if (match(this.seen[i])) count++;
    return count;
  }

  /**
   * A point in the server's order of commands: everything the server ran before `client`'s ECHO is
   * before the mark, whatever connection sent it. Resolves once MONITOR reported the mark.
   */
  async mark(client: Redis): Promise<number> {
    const label = `mark:${randomUUID()}`;
    await client.echo(label);
    let index = -1;
    await waitFor(() => (index = this.seen.findIndex((args) => args[1] === label)) !== -1, { what: `MONITOR to report ${label}` });
    return index;
  }

  stop(): void {
    this.connection.disconnect();
  }
}

/** A script call (EVAL/EVALSHA/FCALL and their read-only forms) with every one of `words` among its keys and arguments. */
export const scriptCallWith =
  (...words: string[]) =>
  (args: readonly string[]): boolean =>
    /^(eval|fcall)/i.test(args[0] ?? '') && words.every((word) => args.includes(word));
