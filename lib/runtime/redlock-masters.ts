import type { Logger } from '@nestjs/common';
import type { RedisOptions } from 'ioredis';
import { LockError } from '../errors';
import { CONNECTION_ERROR_DEBUG, REDLOCK_CONNECTION_FAILED, REDLOCK_DUPLICATE_MASTERS, REDLOCK_MASTER_UNIDENTIFIED, NOT_CONNECTED } from '../lock.messages';
import { withTimeout } from '../redis/bounded-call';
import { closeConnection, isDown, type RedisClient } from '../redis/redis-client';
import { Waiter } from '../redis/waiter';

/**
 * Connections the library opens to RedLock masters fail a command at the first failed reconnect
 * instead of queueing it for about twenty: a dead master must answer "no" now, not replay a stale
 * acquisition when it comes back. Options given for a master override this.
 */
export const REDLOCK_CONNECTION_DEFAULTS: RedisOptions = { maxRetriesPerRequest: 0 };

/**
 * A master's per-command bound, when `redlock.masterTimeout` is not set: a tenth of the lease, kept
 * within these. It bounds liveness only (how long a silent master can delay a decision): safety
 * comes from counting the time spent against the lease, so the floor can spare a busy event loop.
 */
const MIN_MASTER_TIMEOUT_MS = 100;
const MAX_MASTER_TIMEOUT_MS = 500;

export interface MasterConnection {
  readonly client: RedisClient;
  /** Opened by the library (from a URL or options): connected at bootstrap, closed at shutdown. */
  readonly owned: boolean;
}

/** How the masters answered one question. */
export interface Votes {
  yes: number;
  no: number;
  /** Errors and timeouts: masters whose answer is unknown. */
  failed: number;
  firstError: Error | undefined;
}

/**
 * The independent masters of `redlock.clients`: their connections, the majority they form, and
 * the fan-out of one question to all of them with a per-master time bound, so one dead or frozen
 * master never stalls the others. Also owns the RedLock waits, so shutdown can cancel them.
 */
export class RedLockMasters {
  readonly clients: readonly RedisClient[];
  /** A majority: N/2 + 1. */
  readonly quorum: number;
  /** The RedLock waiters sleeping between attempts (no pub/sub: a subscription lives on one server). */
  private readonly waiters = new Set<Waiter>();
  private closedWith: Error | undefined;
  /**
   * Each master's server identity (`run_id` of INFO server) once read. Two entries reaching one
   * server (two URLs, two option objects, two clients) would let one server vote twice: refused.
   */
  private readonly runIds: Array<string | undefined>;
  /** Set once two entries were found to reach one server: every acquisition is refused with it. */
  private duplicate: LockError | undefined;

  constructor(
    private readonly connections: readonly MasterConnection[],
    private readonly masterTimeoutOption: number | undefined,
    private readonly logger: Logger,
  ) {
    this.clients = connections.map((c) => c.client);
    this.runIds = connections.map(() => undefined);
    this.quorum = Math.floor(connections.length / 2) + 1;
    connections.forEach(({ client, owned }, i) => {
      if (owned) client.on('error', (error: Error) => logger.debug?.(CONNECTION_ERROR_DEBUG(`redlock master ${i}`, error.message)));
    });
  }

  /** The per-master bound of one command for a lock with this lease. */
  masterTimeout(leaseMs: number): number {
    return this.masterTimeoutOption ?? Math.min(MAX_MASTER_TIMEOUT_MS, Math.max(MIN_MASTER_TIMEOUT_MS, Math.round(leaseMs / 10)));
  }

  /**
   * Asks every master at once, each bounded by `timeoutMs`, and resolves as soon as the answer is
   * known: with `until: 'majority'` once a majority said yes or no longer can; with `until: 'all'`
   * when every master answered or timed out. Slower answers still
   * complete in the background, and each connection runs its commands in order: a late "yes" to an
   * acquisition is followed there by the release that goes to every master.
   *
   * A master whose connection is down (ioredis is between reconnect attempts) counts as failed at
   * once instead of queueing the question until its next attempt, unless `evenIfDown`: a release
   * is worth queueing (it frees the master if it comes back), a stale acquisition is not. So does
   * a master not identified yet (see `identify`), unless `evenIfDown`: its vote might be another
   * entry's vote counted twice.
   */
  ask(
    question: (client: RedisClient) => Promise<boolean>,
    timeoutMs: number,
    { until = 'majority', evenIfDown = false }: { until?: 'majority' | 'all'; evenIfDown?: boolean } = {},
  ): Promise<Votes> {
    const votes: Votes = { yes: 0, no: 0, failed: 0, firstError: undefined };
    const total = this.clients.length;
    return new Promise<Votes>((resolve) => {
      const settle = (): void => {
        const pending = total - votes.yes - votes.no - votes.failed;
        const decided = until === 'majority' && (votes.yes >= this.quorum || votes.yes + pending < this.quorum);
        if (decided || pending === 0) resolve({ ...votes });
      };
      for (const client of this.clients) {
        let answer: Promise<boolean>;
        try {
          answer = evenIfDown
            ? withTimeout(question(client), timeoutMs)
            : isDown(client)
              ? Promise.reject(new Error(NOT_CONNECTED(client.status)))
              : !this.identified(client)
                ? Promise.reject(new Error(REDLOCK_MASTER_UNIDENTIFIED(client.status)))
                : withTimeout(question(client), timeoutMs);
        } catch (error) {
          answer = Promise.reject(error);
        }
        answer.then(
          (yes) => {
            if (yes) votes.yes += 1;
            else votes.no += 1;
            settle();
          },
          (error: unknown) => {
            votes.failed += 1;
            votes.firstError ??= error instanceof Error ? error : new Error(String(error));
            settle();
          },
        );
      }
    });
  }

  /** Every master's answer, `undefined` for one that is down, not identified, failed or did not answer in time. */
  askEach<T>(question: (client: RedisClient) => Promise<T>, timeoutMs: number): Promise<Array<T | undefined>> {
    return Promise.all(
      this.clients.map(async (client) => {
        if (isDown(client) || !this.identified(client)) return undefined;
        try {
          return await withTimeout(question(client), timeoutMs);
        } catch {
          return undefined;
        }
      }),
    );
  }

  /**
   * Reads the `run_id` of every master not identified yet (each bounded by `timeoutMs`; one that is
   * down or silent stays unidentified and is asked again next time), then throws a `LockError`
   * naming the entries when two reach one server. At bootstrap (`evenIfDown`: connections are still
   * opening) and before every acquisition until all are identified, so no grant ever counts one
   * server twice: `identified()` says which masters' votes may count.
   */
  async identify(timeoutMs: number, { evenIfDown = false }: { evenIfDown?: boolean } = {}): Promise<void> {
    if (this.duplicate) throw this.duplicate;
    await Promise.all(
      this.clients.map(async (client, i) => {
        if (this.runIds[i] !== undefined || (!evenIfDown && isDown(client))) return;
        try {
          const info = await withTimeout(client.info('server'), timeoutMs);
          // A server that reports no run_id (a proxy) cannot be compared: it stands for itself.
          this.runIds[i] ??= /^run_id:(\S+)/m.exec(info)?.[1] ?? `unknown:${i}`;
        } catch {
          // unreachable for now: its votes do not count until it is identified
        }
      }),
    );
    const first = new Map<string, number>();
    this.runIds.forEach((runId, i) => {
      if (runId === undefined || this.duplicate) return;
      const earlier = first.get(runId);
      if (earlier === undefined) first.set(runId, i);
      else this.duplicate = new LockError(REDLOCK_DUPLICATE_MASTERS(earlier, i, runId));
    });
    if (this.duplicate) throw this.duplicate;
  }

  /** Whether `client`'s server identity is known (and distinct from the others'): only then does its vote count. */
  identified(client: RedisClient): boolean {
    return this.runIds[this.clients.indexOf(client)] !== undefined;
  }

  /**
   * The RedLock waits' room: a seat is a plain sleeping waiter (nothing wakes it but its time, or
   * shutdown), kept so shutdown can cancel it. See `WaitRoom`.
   */
  seat(channel: string): Waiter {
    if (this.closedWith) throw this.closedWith;
    const waiter = new Waiter(channel);
    this.waiters.add(waiter);
    return waiter;
  }

  /** RedLock waiters sleeping between rounds right now. */
  get waiterCount(): number {
    return this.waiters.size;
  }

  leave(waiter: Waiter): void {
    this.waiters.delete(waiter);
  }

  /** Nothing to subscribe to: its sleeps end by time alone. */
  subscribed(): Promise<boolean> {
    return Promise.resolve(true);
  }

  /** Connects the connections the library opened (once every module is validated). */
  connect(): void {
    this.connections.forEach(({ client, owned }, i) => {
      if (owned && client.status === 'wait') {
        client.connect().catch((error: Error) => this.logger.warn(REDLOCK_CONNECTION_FAILED(i, error.message)));
      }
    });
  }

  /** Rejects every RedLock wait in progress, and the ones that would start, with `error`. */
  cancelWaits(error: Error): void {
    this.closedWith = error;
    for (const waiter of [...this.waiters]) waiter.cancel(error);
    this.waiters.clear();
  }

  /** Closes the connections the library opened; the user's own clients stay open. */
  async close(): Promise<void> {
    await Promise.all(this.connections.filter((c) => c.owned).map((c) => closeConnection(c.client)));
  }
}
