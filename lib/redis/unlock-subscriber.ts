import { Logger } from '@nestjs/common';
import { CHANNEL_COMMAND, CONNECTION_ERROR_DEBUG, SUBSCRIBE_FAILED, SUBSCRIBER_CLOSED } from '../lock.messages';
import { isCluster, type RedisClient } from './redis-client';
import { Waiter, type HandedGrant } from './waiter';

/** Payload of an unlock message: how many local waiters the release can admit. */
export const WAKE_ONE = 'one';
export const WAKE_ALL = 'all';
export type UnlockMessage = typeof WAKE_ONE | typeof WAKE_ALL;
/**
 * Prefix of a message that wakes the waiters it names (space-separated waiter ids), in whichever
 * process they wait: a semaphore's release wakes exactly the waiters its freed permits admit.
 */
export const WAKE_IDS = 'ids:';
/**
 * Prefix of a message that hands a lock to one waiter: `granted:<waiter id> <token> <send stamp of
 * its last attempt>.<its join's proof> (or -) <ms since that attempt> <grant lease ms>` (the waiter id may have spaces:
 * the last four fields are not). See docs/hand-off-protocol.md.
 */
export const GRANT = 'granted:';
/**
 * An older version's grant message (`grant:<waiter id> <token> <ms since> <grant lease ms>`): it
 * cannot be dated safely, so it only wakes the waiter it names, whose attempt finds its grant.
 */
export const LEGACY_GRANT = 'grant:';

/**
 * Prefix of the notice that the waiter ahead in line was granted the lock: `next:<waiter id> <grant
 * lease ms>`; the named waiter sleeps no longer than that (see `Waiter.wakeWithin`).
 */
export const NEXT = 'next:';

/** A positive decimal: Redisson's write-unlock `1` or a semaphore's permit count (docs/redisson-interop.md#wake-ups). */
const REDISSON_WAKE_ALL = /^[1-9][0-9]*$/;

/** Reads a `GRANT` message: the waiter it names and what it was handed. */
export function parseGrant(message: string): { waiterId: string; grant: HandedGrant } | undefined {
  const fields = message.slice(GRANT.length).split(' ');
  if (fields.length < 5) return undefined;
  const [token, stamp, since, lease] = fields.splice(-4);
  const dot = stamp.indexOf('.');
  const dated = stamp !== '-';
  return {
    waiterId: fields.join(' '),
    grant: {
      fencingToken: Number(token) || undefined,
      attemptStamp: dated ? Number(dot === -1 ? stamp : stamp.slice(0, dot)) : undefined,
      attemptProof: dated && dot !== -1 ? stamp.slice(dot + 1) : undefined,
      sinceAttemptMs: Number(since),
      grantLeaseMs: Number(lease),
    },
  };
}

/** The waiter an older version's grant message names (see `LEGACY_GRANT`). */
function legacyGrantee(message: string): string {
  return message.slice(LEGACY_GRANT.length).split(' ').slice(0, -3).join(' ');
}

/** What one seat list subscribes: its channel, and the lock's own channel when it shares it. */
function subscribedChannels(channel: string, seats: ChannelSeats): string[] {
  return seats.shared === undefined ? [channel] : [channel, seats.shared];
}

/** The seats of a channel, longest-waiting first (a snapshot: waking may make seats leave). */
function seatsOf(seats: ChannelSeats): Waiter[] {
  const all: Waiter[] = [];
  for (let waiter = seats.head; waiter; waiter = waiter.next) all.push(waiter);
  return all;
}

interface ChannelSeats {
  /** The longest-waiting seat; the seats are linked through `Waiter.next` / `prev`. */
  head: Waiter | undefined;
  tail: Waiter | undefined;
  count: number;
  /** True once Redis confirmed the subscription (ioredis renews it by itself after a reconnect). */
  active: boolean;
  /** The subscription in progress: true when it took, false when it failed (the next ask retries). */
  pending: Promise<boolean> | undefined;
  /**
   * Armed by a hand-over to a waiter elsewhere: when its short grant lease ends, one seat here
   * retries, in case that waiter died before confirming it (the lock is then free with nobody told).
   */
  handOverCheck: NodeJS.Timeout | undefined;
  /**
   * The lock's own channel, subscribed with this one (in one command) and delivered to these seats:
   * releases that nobody in line waits for, and releases and grants of older versions, come there.
   */
  readonly shared: string | undefined;
}

/**
 * The one subscriber connection of a module instance. Each channel is subscribed once, however many
 * local waiters it has, and unsubscribed when its last waiter leaves.
 */
export class UnlockSubscriber {
  private readonly logger = new Logger('LockModule');
  private readonly channels = new Map<string, ChannelSeats>();
  /** A lock's own channel -> the channel whose seats it is delivered to (see `ChannelSeats.shared`). */
  private readonly sharedChannels = new Map<string, string>();
  private ready: Promise<void> | undefined;
  private closedWith: Error | undefined;
  /**
   * Channels to unsubscribe once the connection is ready again: left while it was not, or whose
   * UNSUBSCRIBE failed (ioredis gave up on it during a long outage). See `unsubscribe`.
   */
  private readonly unsubscribeWhenReady = new Set<string>();

  constructor(
    private readonly connection: RedisClient,
    /** Sharded pub/sub (SSUBSCRIBE) keeps a cluster's unlock messages inside their shard. */
    private readonly sharded: boolean,
  ) {
    connection.on(sharded ? 'smessage' : 'message', (channel: string, message: string) =>
      this.deliver(channel, message),
    );
    // Errors surface through the waits' own timeouts; an unhandled 'error' event would crash the process.
    connection.on('error', (error: Error) => this.logger.debug?.(CONNECTION_ERROR_DEBUG('subscriber', error.message)));
    // Back from a disconnection, unlock messages may have been missed (or Redis restarted empty):
    // every waiter retries now instead of sleeping out its lock's TTL.
    // Resubscribe, then check: a channel counts as subscribed again only once a SUBSCRIBE after the
    // reconnect was confirmed, and each waiter's next round (every waiter is woken) waits for that
    // before it asks Redis, so a grant or release made while the connection was down is found by
    // that attempt, and one made after it arrives as a message.
    connection.on('close', () => {
      for (const seats of this.channels.values()) {
        seats.active = false;
        seats.pending = undefined;
      }
    });
    connection.on('ready', () => {
      this.unsubscribeLeftovers();
      this.wakeAll();
    });
    if (isCluster(connection)) {
      // A shard that stops serving a channel (its slot moved: Redis drops the subscription with an
      // unrequested SUNSUBSCRIBE, which ioredis reports as a node error) is re-subscribed on the
      // slot's new owner once the slot map is re-read: do it now rather than at the next interval.
      connection.on('nodeError', (error: Error) => {
        this.logger.debug?.(CONNECTION_ERROR_DEBUG('subscriber shard', error.message));
        connection.refreshSlotsCache();
      });
    }
  }

  /** Number of channels subscribed right now (0 when nobody waits). */
  get channelCount(): number {
    return this.channels.size;
  }

  /** Local callers waiting on `channel`, or on any channel when none is given. */
  waiterCount(channel?: string): number {
    if (channel !== undefined) return this.channels.get(channel)?.count ?? 0;
    let count = 0;
    for (const seats of this.channels.values()) count += seats.count;
    return count;
  }

  /** Local callers asleep on `channel` (or any channel) between two attempts. */
  sleepingCount(channel?: string): number {
    let count = 0;
    const all = channel === undefined ? [...this.channels.values()] : [this.channels.get(channel)];
    for (const seats of all) for (let waiter = seats?.head; waiter; waiter = waiter.next) if (waiter.sleeping) count += 1;
    return count;
  }

  /** True while some local caller waits on `channel`. */
  hasWaiters(channel: string): boolean {
    return this.channels.has(channel);
  }

  /**
   * Takes a seat on `channel` and starts its subscription if this is the first seat (with `shared`,
   * the lock's own channel, whose messages come to the same seats). Does not wait for the
   * subscription: ask `subscribed` for that, with a bound.
   */
  seat(channel: string, id?: string, shared?: string): Waiter {
    if (this.closedWith) throw this.closedWith;
    const waiter = new Waiter(channel, id);
    let seats = this.channels.get(channel);
    if (!seats) {
      seats = { head: undefined, tail: undefined, count: 0, active: false, pending: undefined, handOverCheck: undefined, shared };
      this.channels.set(channel, seats);
      if (shared !== undefined) this.sharedChannels.set(shared, channel);
      this.startSubscription(channel, seats);
    }
    waiter.prev = seats.tail;
    if (seats.tail) seats.tail.next = waiter;
    else seats.head = waiter;
    seats.tail = waiter;
    seats.count += 1;
    return waiter;
  }

  /**
   * Whether `waiter`'s channel is subscribed, waiting at most `ms` for a subscription in progress
   * (a failed one is tried again). False means: no pub/sub wake can be counted on yet.
   */
  subscribed(waiter: Waiter, ms: number): Promise<boolean> {
    const seats = this.channels.get(waiter.channel);
    if (!seats) return Promise.resolve(false);
    if (seats.active) return Promise.resolve(true);
    const pending = seats.pending ?? this.startSubscription(waiter.channel, seats);
    return ms > 0 ? waiter.waitFor(pending, ms, false) : Promise.resolve(false);
  }

  /** Whether `waiter`'s channel is subscribed right now. */
  isSubscribed(waiter: Waiter): boolean {
    return this.channels.get(waiter.channel)?.active === true;
  }

  /** Takes a seat on `channel`; resolves once the subscription is active. */
  async join(channel: string): Promise<Waiter> {
    const waiter = this.seat(channel);
    try {
      if (!(await this.subscribed(waiter, Number.MAX_SAFE_INTEGER))) throw new Error(SUBSCRIBE_FAILED(channel));
    } catch (error) {
      this.leave(waiter);
      throw error;
    }
    return waiter;
  }

  /**
   * Gives up the seat. A wake it received and did not use goes to the next waiter; so does the head
   * of the line's turn when it leaves without the lock (the others may be queued newcomers that
   * have not seen the lock's TTL yet and would otherwise sleep a whole lease).
   */
  leave(waiter: Waiter, acquired = true): void {
    const seats = this.channels.get(waiter.channel);
    if (!seats) return;
    const { prev, next } = waiter;
    const first = seats.head === waiter;
    if (!first && !prev) return; // not seated here (left already)
    if (prev) prev.next = next;
    else seats.head = next;
    if (next) next.prev = prev;
    else seats.tail = prev;
    waiter.prev = waiter.next = undefined;
    seats.count -= 1;
    if (waiter.pendingWake || (!acquired && first)) this.wakeOne(seats);
    if (seats.count === 0) {
      clearTimeout(seats.handOverCheck);
      this.channels.delete(waiter.channel);
      if (seats.shared !== undefined) this.sharedChannels.delete(seats.shared);
      if (!this.closedWith) this.unsubscribe(subscribedChannels(waiter.channel, seats));
    }
  }

  /** Rejects every wait in progress; later joins fail with the same error. */
  close(error: Error): void {
    this.closedWith = error;
    for (const seats of this.channels.values()) {
      clearTimeout(seats.handOverCheck);
      for (const waiter of seatsOf(seats)) waiter.cancel(error);
    }
    this.channels.clear();
    this.sharedChannels.clear();
  }

  /** Every waiter retries now (a connection came back: a release may have gone unheard). */
  wakeAll(): void {
    for (const seats of this.channels.values()) for (const waiter of seatsOf(seats)) waiter.wake();
  }

  private startSubscription(channel: string, seats: ChannelSeats): Promise<boolean> {
    const pending = this.subscribe(channel, seats).then(
      () => {
        seats.active = true;
        return true;
      },
      (error: Error) => {
        if (seats.pending === pending) seats.pending = undefined;
        this.logger.debug?.(CONNECTION_ERROR_DEBUG(CHANNEL_COMMAND('subscribe', channel), error.message));
        return false;
      },
    );
    seats.pending = pending;
    return pending;
  }

  private deliver(channel: string, message: string): void {
    const seats = this.channels.get(channel) ?? this.channels.get(this.sharedChannels.get(channel) as string);
    if (!seats) return;
    if (message === WAKE_ALL) for (const waiter of seatsOf(seats)) waiter.wake();
    else if (message.startsWith(GRANT)) this.handOver(seats, message);
    else if (message.startsWith(NEXT)) this.nextInLine(seats, message);
    else if (message.startsWith(LEGACY_GRANT)) this.wakeNamed(seats, [legacyGrantee(message)]);
    else if (message.startsWith(WAKE_IDS)) this.wakeNamed(seats, message.slice(WAKE_IDS.length).split(' '));
    // Redisson's messages (layout 'redisson'): '0' an unlock (one waiter per process tries, as one
    // per JVM does), '1' a write unlock and a semaphore's new permit count (every waiter tries).
    else if (REDISSON_WAKE_ALL.test(message)) for (const waiter of seatsOf(seats)) waiter.wake();
    else this.wakeOne(seats);
  }

  /** Gives a lock a release handed over to the waiter it names, if that waiter waits here. */
  private handOver(seats: ChannelSeats, message: string): void {
    const handed = parseGrant(message);
    if (!handed) return;
    // One pass: the seat the grant names, and the same owner's other seats (its other acquisitions
    // wait behind its one entry in line, lua/include/line-owner-entry.lua, and re-enter now).
    const space = handed.waiterId.indexOf(' ');
    const owner = space === -1 ? undefined : handed.waiterId.slice(0, space + 1);
    let granted: Waiter | undefined;
    let sameOwner: Waiter[] | undefined;
    for (let waiter = seats.head; waiter; waiter = waiter.next) {
      if (waiter.id === handed.waiterId) granted = waiter;
      else if (owner !== undefined && waiter.id?.startsWith(owner)) (sameOwner ??= []).push(waiter);
    }
    if (!granted) {
      // Handed to a waiter not seated here (an earlier join's entry): the waiters here sleep until
      // the lock's TTL, which a new holder that never confirms does not renew.
      return this.checkAfterGrantLease(seats, handed.grant.grantLeaseMs);
    }
    // The others first: taking the grant may end the granted waiter's seat at once.
    if (sameOwner) for (const waiter of sameOwner) waiter.wake();
    granted.handOver(handed.grant);
  }

  /**
   * One seat here retries when a grant lease of `ms` ends: a confirmed holder answers with its TTL;
   * a grantee that died leaves the lock free, and that attempt hands it on.
   */
  private checkAfterGrantLease(seats: ChannelSeats, ms: number): void {
    clearTimeout(seats.handOverCheck);
    seats.handOverCheck = setTimeout(() => {
      seats.handOverCheck = undefined;
      this.wakeOne(seats);
    }, ms + 1);
    seats.handOverCheck.unref?.();
  }

  /**
   * The waiter a `NEXT` notice names, if it waits here, sleeps no longer than the grant lease ahead
   * of it. `next:*` (on the lock's own channel: the line's head was all the grantee's process) arms
   * one check here for the lease's end, as a grant to a waiter elsewhere does.
   */
  private nextInLine(seats: ChannelSeats, message: string): void {
    const space = message.lastIndexOf(' ');
    const id = message.slice(NEXT.length, space);
    const ms = Number(message.slice(space + 1));
    if (!(ms >= 0)) return;
    if (id === '*') return this.checkAfterGrantLease(seats, ms);
    for (let waiter = seats.head; waiter; waiter = waiter.next) {
      if (waiter.id === id) return waiter.wakeWithin(ms + 1);
    }
  }

  /** Wakes the local waiters among `ids` (the others wait in other processes). */
  private wakeNamed(seats: ChannelSeats, ids: readonly string[]): void {
    if (ids.length === 1) {
      for (let waiter = seats.head; waiter; waiter = waiter.next) {
        if (waiter.id === ids[0]) {
          waiter.wake();
          return;
        }
      }
      return;
    }
    const named = new Set(ids);
    for (const waiter of seatsOf(seats)) if (waiter.id !== undefined && named.has(waiter.id)) waiter.wake();
  }

  /** Wakes the longest-waiting seat that has not been woken yet. */
  private wakeOne(seats: ChannelSeats): void {
    let waiter = seats.head;
    while (waiter && waiter.pendingWake) waiter = waiter.next;
    waiter?.wake();
  }

  private async subscribe(channel: string, seats: ChannelSeats): Promise<void> {
    await this.whenReady();
    // Every seat left while the connection was coming up (a waiter got the lock through the command
    // connection first, after a reconnect): its UNSUBSCRIBE went out at 'ready' just before this,
    // so subscribing now would leave a channel that nobody ever unsubscribes.
    if (this.channels.get(channel) !== seats) return;
    const connection = this.connection as RedisClient & { ssubscribe(...channels: string[]): Promise<unknown> };
    const channels = subscribedChannels(channel, seats);
    await (this.sharded ? connection.ssubscribe(...channels) : connection.subscribe(...channels));
  }

  /**
   * Not before 'ready': after a reconnect ioredis subscribes the channels it had again just before
   * it emits 'ready', but it writes an UNSUBSCRIBE at once while the connection is still in its
   * handshake (the command may run while Redis loads). An UNSUBSCRIBE sent then would run first and
   * the channel stay subscribed with nobody waiting on it.
   */
  private unsubscribe(channels: readonly string[]): void {
    if (this.connection.status !== 'ready') {
      for (const channel of channels) this.unsubscribeWhenReady.add(channel);
      return;
    }
    const connection = this.connection as RedisClient & { sunsubscribe(...channels: string[]): Promise<unknown> };
    (this.sharded ? connection.sunsubscribe(...channels) : connection.unsubscribe(...channels)).catch((error: Error) => {
      this.logger.debug?.(CONNECTION_ERROR_DEBUG(CHANNEL_COMMAND('unsubscribe', channels.join(' ')), error.message));
      if (!this.closedWith) for (const channel of channels) this.unsubscribeWhenReady.add(channel);
    });
  }

  /** Back from a reconnect: the channels ioredis subscribed again although nobody waits on them. */
  private unsubscribeLeftovers(): void {
    const channels = [...this.unsubscribeWhenReady].filter((channel) => !this.channels.has(channel) && !this.sharedChannels.has(channel));
    this.unsubscribeWhenReady.clear();
    for (const channel of channels) this.unsubscribe([channel]);
  }

  /** ioredis rejects SUBSCRIBE during its connection handshake: wait for 'ready' first. */
  private whenReady(): Promise<void> {
    if (this.connection.status === 'ready') return Promise.resolve();
    this.ready ??= new Promise<void>((resolve, reject) => {
      const onReady = (): void => {
        this.connection.off('end', onEnd);
        this.ready = undefined;
        resolve();
      };
      const onEnd = (): void => {
        this.connection.off('ready', onReady);
        this.ready = undefined;
        reject(new Error(SUBSCRIBER_CLOSED));
      };
      this.connection.once('ready', onReady);
      this.connection.once('end', onEnd);
      if (this.connection.status === 'wait') this.connection.connect().catch(() => undefined);
    });
    return this.ready;
  }
}
