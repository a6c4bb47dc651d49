import { attemptOnConnection, type AttemptOutcome, type Contender, type Grant, type WaitRoom } from '../locks/acquisition/contender';
import type { WaitTarget } from '../deadlocks/wait-node';
import type { CallTicket } from '../redis/bounded-call';
import { LuaScript } from '../redis/lua-script';
import type { HoldTerms } from '../runtime/held-locks';
import type { LockEngine } from '../engine/lock-engine';
import { confirmHandOver } from '../runtime/hand-over';
import { Permit, type PermitSource } from './permit';
import { permitWaitTarget } from './permit-wait';
import { SemaphoreLimitError } from './semaphore-errors';
import type { SemaphoreKeys } from './semaphore-keys';
import type { AcquireOptions } from './semaphore.options';

const scripts = {
  acquire: LuaScript.named('semaphore-acquire'),
  renew: LuaScript.named('semaphore-renew'),
};

/** What a request asks of its semaphore (`Semaphore` satisfies it): the request sits below it. */
export interface PermitRequestSource extends PermitSource {
  /** The limit the request asks with. */
  readonly permits: number;
  readonly keys: SemaphoreKeys;
}

const ignore = (): undefined => undefined;

/**
 * One request for permits as the acquisition machine's contender: attempts take permits (joining
 * the semaphore's FIFO line in Redis when waiting), waiters sleep on the semaphore's channel and are
 * woken by name (a release wakes exactly the waiters its permits admit), and the retries double as
 * heartbeats that keep the waiter's place in line.
 */
export class PermitRequest implements Contender<Permit | null> {
  readonly engine: LockEngine;
  readonly waitChannel: string;
  /** The semaphore's own channel: an older version's grants and `ids:` wakes come there. */
  readonly sharedChannel: string;
  readonly wakesOnRelease = true;
  readonly maxSleepMs: number;
  readonly replicaKey: string;

  constructor(
    private readonly semaphore: PermitRequestSource,
    /** This acquisition's owner id: its place in line, its seat's id, and the permits' holder. */
    readonly waiterId: string,
    private readonly take: number,
  ) {
    this.engine = semaphore.engine;
    // This process's channel for the semaphore: grants to its waiters come here only.
    this.waitChannel = `${semaphore.keys.channel}:${this.engine.ids.clientId}`;
    this.sharedChannel = semaphore.keys.channel;
    this.replicaKey = semaphore.keys.base;
    // A waiter's place in line lasts fairLockWaiterTimeout; its retries renew it three times per.
    this.maxSleepMs = Math.max(1, Math.floor(this.engine.options.fairLockWaiterTimeout / 3));
  }

  get name(): string {
    return this.semaphore.name;
  }

  /** What a wait for permits waits for, as the deadlock check sees it (docs/deadlocks.md). */
  get waitTarget(): WaitTarget {
    const { engine, semaphore, waiterId, take } = this;
    const { name, permits: total } = semaphore;
    return permitWaitTarget({ engine, name, lockKey: semaphore.keys.base, ownerId: waiterId, need: take, total, crossProcess: true });
  }

  get room(): WaitRoom {
    return this.engine.subscriber;
  }

  /**
   * While others of this process wait already (the channel is subscribed), a newcomer takes its seat
   * before its attempt: a release that names it right after the attempt is not missed, and no second
   * attempt is needed. An uncontended acquisition never subscribes.
   */
  seatsFirst(): boolean {
    return this.engine.subscriber.hasWaiters(this.waitChannel);
  }

  attempt(leaseMs: number, _requestId: string, joinLine: boolean, attemptStamp = ''): Promise<AttemptOutcome> {
    const { semaphore, engine, take, waiterId } = this;
    const { keys } = semaphore;
    const { client, options, publishCommand, fenceMemoryMs } = engine;
    return attemptOnConnection(engine, semaphore.name, async (ticket: CallTicket) => {
      const reply = await scripts.acquire.run(
        client,
        [keys.base, keys.leases, keys.line, keys.deadlines, keys.fence, keys.channel],
        [semaphore.permits, take, leaseMs, waiterId, options.fairLockWaiterTimeout, joinLine ? 1 : 0, publishCommand, fenceMemoryMs, attemptStamp],
        ticket,
      );
      if (!Array.isArray(reply)) return Number(reply);
      if (reply[0] === 'limit') throw new SemaphoreLimitError(semaphore.name, semaphore.permits, Number(reply[1]));
      return { fencingToken: Number(reply[0]) };
    });
  }

  held(grant: Grant, leaseMs: number, options: AcquireOptions | undefined, grantSentAt: number): Permit {
    const { semaphore, engine, waiterId } = this;
    const { keys } = semaphore;
    const fencingToken = grant.fencingToken as number;
    const terms: HoldTerms = {
      leaseMs,
      grantSentAt,
      fencingToken,
      renewal:
        options?.leaseTime === undefined
          ? { client: engine.client, call: { script: scripts.renew, keys: [keys.base, keys.leases], args: [leaseMs, waiterId] } }
          : undefined,
      releaseOne: () => semaphore.giveBack(waiterId, false),
      // `lock.held` / `lock.hold.duration` / `lock.lost`: one hold per Permit, whatever its `take`.
      telemetry: engine.telemetry?.holdTelemetry('semaphore', semaphore.name, options),
      grantedLeaseMs: grant.grantedLeaseMs,
    };
    const hold = engine.holds.acquired(semaphore.name, keys.base, waiterId, terms);
    hold.permits = this.take;
    if (grant.grantedLeaseMs !== undefined) {
      const renewal = { script: scripts.renew, keys: [keys.base, keys.leases], args: [leaseMs, waiterId] };
      confirmHandOver(engine, semaphore.name, hold, leaseMs, renewal);
    }
    return new Permit(semaphore, waiterId, this.take, fencingToken, hold);
  }

  undoGrant(): Promise<unknown> {
    return this.semaphore.giveBack(this.waiterId, true).catch(ignore);
  }

  /**
   * Leaves the line, and gives back what an attempt whose answer was lost may have granted: the
   * call goes out after the attempts on the same connection, so it runs after them.
   */
  abandon(_requestId: string, joinedLine: boolean, outcomeUnknown: boolean): Promise<unknown> | undefined {
    if (!joinedLine && !outcomeUnknown) return undefined;
    return this.semaphore.giveBack(this.waiterId, true).catch(ignore);
  }
}
