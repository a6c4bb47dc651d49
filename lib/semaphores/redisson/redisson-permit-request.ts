import { attemptOnConnection, type AttemptOutcome, type Contender, type Grant, type WaitRoom } from '../../locks/acquisition/contender';
import type { WaitTarget } from '../../deadlocks/wait-node';
import type { LockOptions } from '../../locks/lock';
import { LuaScript } from '../../redis/lua-script';
import type { HoldTerms } from '../../runtime/held-locks';
import type { LockEngine } from '../../engine/lock-engine';
import { Permit, type PermitSource } from '../permit';
import { SemaphoreLimitError } from '../semaphore-errors';
import { NEVER_EXPIRES, newPermitId } from './permit-ids';
import type { RedissonRuntime } from '../../layouts/redisson-runtime';
import { permitWaitTarget } from '../permit-wait';

const acquireScript = LuaScript.named('redisson-pes-acquire');
const ignore = (): undefined => undefined;

/** Each granted Permit's ids (a `run`'s `minHoldTime` renews them exactly in place of the release). */
const idsOfPermit = new WeakMap<Permit, readonly Buffer[]>();
export const permitIdsOf = (permit: Permit): readonly Buffer[] | undefined => idsOfPermit.get(permit);

/** What a request asks of its semaphore (`RedissonSemaphore` satisfies it): the request sits below it. */
export interface RedissonPermitSource {
  readonly name: string;
  readonly engine: LockEngine;
  /** The limit the request asks with. */
  readonly permits: number;
  /** `N`, Redisson's counter key, and its companions (`{N}:timeout`, `redisson_sc:{N}`, our marker). */
  readonly redisKey: string;
  readonly timeoutKey: string;
  readonly channel: string;
  readonly markerKey: string;
  /** The semaphore's key in the hold registry. */
  readonly holdKey: string;
  /** Read per call: the start's probe decides the publish command and the subscriber's kind. */
  readonly redisson: RedissonRuntime;
  /** Gives back one acquisition's permits: 1 when all were leased and in time. */
  giveBackIds(ids: readonly Buffer[]): Promise<number>;
  /** Moves the permits' deadline to `leaseMs` from now: true when all were still leased. */
  renewIds(ids: readonly Buffer[], leaseMs: number, exact: boolean): Promise<boolean>;
}

/**
 * One acquisition of permits in layout 'redisson', as the acquisition machine's contender. Its ids
 * (one per permit) are made once and sent with every attempt, so an attempt whose answer was lost
 * is found granted by the next one, and giving back is exact. No line (Java waiters keep none):
 * waiters sleep on `redisson_sc:{N}`, whose count wakes them, or until the nearest lease deadline.
 */
export class RedissonPermitRequest implements Contender<Permit | null> {
  readonly engine: LockEngine;
  readonly waitChannel: string;
  readonly wakesOnRelease = true;
  // A Redisson waiter keeps no place to refresh: sleep until woken or the nearest deadline.
  readonly maxSleepMs = Number.POSITIVE_INFINITY;
  readonly replicaKey: string;
  readonly waiterId: string;
  private readonly ids: readonly Buffer[];

  constructor(
    private readonly semaphore: RedissonPermitSource,
    private readonly take: number,
  ) {
    this.engine = semaphore.engine;
    this.waitChannel = semaphore.channel;
    this.replicaKey = semaphore.redisKey;
    const { clientId } = this.engine.ids;
    this.ids = Array.from({ length: take }, () => newPermitId(clientId));
    this.waiterId = this.ids[0].toString('hex');
  }

  get name(): string {
    return this.semaphore.name;
  }

  get room(): WaitRoom {
    return this.engine.subscriber;
  }

  /** In-process only (Java holders keep no wait-for records: docs/redisson-interop.md#deadlocks). */
  get waitTarget(): WaitTarget {
    const { engine, semaphore, waiterId, take } = this;
    const { name, permits: total } = semaphore;
    return permitWaitTarget({ engine, name, lockKey: semaphore.holdKey, ownerId: waiterId, need: take, total, crossProcess: false });
  }

  /** Seated before the attempt while others of this process wait (subscribed already); never before the start's probe decided the subscriber's kind. */
  seatsFirst(): boolean {
    return this.semaphore.redisson.decided && this.engine.subscriber.hasWaiters(this.waitChannel);
  }

  attempt(leaseMs: number): Promise<AttemptOutcome> {
    const { semaphore, engine, take, ids } = this;
    return attemptOnConnection(engine, semaphore.name, async (ticket) => {
      const { publishCommand } = semaphore.redisson;
      // Deadlines are epoch ms on this host's clock, as Redisson's (its holders compare with theirs).
      const now = Date.now();
      const keys = [semaphore.redisKey, semaphore.timeoutKey, semaphore.channel, semaphore.markerKey];
      const args = [take, now + Math.ceil(leaseMs), now, NEVER_EXPIRES, publishCommand, semaphore.permits, ...ids];
      const reply = await acquireScript.run(engine.client, keys, args, ticket);
      if (reply === 'OK') return { fencingToken: undefined };
      if (Array.isArray(reply) && reply[0] === 'limit') throw new SemaphoreLimitError(semaphore.name, semaphore.permits, Number(reply[1]));
      // ':<deadline>': sleep until the nearest lease ends (a release wakes sooner); nil: back off.
      if (typeof reply === 'string' && reply.startsWith(':')) return Math.max(1, Number(reply.slice(1)) - Date.now());
      return -1;
    });
  }

  held(grant: Grant, leaseMs: number, options: LockOptions | undefined, grantSentAt: number): Permit {
    const { semaphore, engine, ids, waiterId, take } = this;
    const renew = (): Promise<boolean> => semaphore.renewIds(ids, leaseMs, false);
    const terms: HoldTerms = {
      leaseMs,
      grantSentAt,
      renewal: options?.leaseTime === undefined ? { renew } : undefined,
      releaseOne: () => semaphore.giveBackIds(ids),
      telemetry: engine.telemetry?.holdTelemetry('semaphore', semaphore.name, options),
      grantedLeaseMs: grant.grantedLeaseMs,
    };
    const hold = engine.holds.acquired(semaphore.name, semaphore.holdKey, waiterId, terms);
    hold.permits = take;
    const source: PermitSource = { name: semaphore.name, engine, giveBack: () => semaphore.giveBackIds(ids) };
    const permit = new Permit(source, waiterId, take, 0, hold);
    idsOfPermit.set(permit, ids);
    return permit;
  }

  undoGrant(): Promise<unknown> {
    return this.semaphore.giveBackIds(this.ids).catch(ignore);
  }

  /** An attempt whose answer was lost may have granted: give its ids back (a no-op when it did not). */
  abandon(_requestId: string, _joinedLine: boolean, outcomeUnknown: boolean): Promise<unknown> | undefined {
    return outcomeUnknown ? this.semaphore.giveBackIds(this.ids).catch(ignore) : undefined;
  }
}
