import { Logger } from '@nestjs/common';
import { CHANNEL_COMMAND, CONNECTION_ERROR_DEBUG, SUBSCRIBE_FAILED, SUBSCRIBER_CLOSED } from '../lock.messages';
import { isCluster, type RedisClient } from './redis-client';
import { deliverTo, seatsOf, subscribedChannels, wakeOne, type ChannelSeats } from './channel-seats';
import { IdleChannels } from './idle-channels';
import { Waiter } from './waiter';

/**
 * The one subscriber connection of a module instance. Each channel is subscribed once, however many
 * local waiters it has, and unsubscribed when its last waiter leaves (a while after, when that waiter
 * got the lock: see idle-channels.ts).
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
  /** Channels whose last waiter left with the lock, still subscribed for a while. */
  private readonly idle = new IdleChannels((channel, seats) => this.unsubscribe(subscribedChannels(channel, seats)));

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
      this.idle.connectionClosed();
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
      const idle = this.idle.takeBack(channel, shared);
      seats = idle ?? { head: undefined, tail: undefined, count: 0, active: false, pending: undefined, handOverCheck: undefined, shared };
      this.channels.set(channel, seats);
      if (shared !== undefined) this.sharedChannels.set(shared, channel);
      // Idle seats are still subscribed, unless the connection dropped meanwhile.
      if (!seats.active && !seats.pending) this.startSubscription(channel, seats);
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
    if (waiter.pendingWake || (!acquired && first)) wakeOne(seats);
    if (seats.count === 0) {
      clearTimeout(seats.handOverCheck);
      this.channels.delete(waiter.channel);
      if (seats.shared !== undefined) this.sharedChannels.delete(seats.shared);
      if (this.closedWith) return;
      // Left with the lock: a process's channel (the lock's own one shared on it) is kept a while,
      // for this process's next wait (no UNSUBSCRIBE between a grant and its body either). Without
      // the lock (timed out, cancelled), or an owner's own channel (a fair waiter's, never waited on
      // again): unsubscribed now.
      if (acquired && seats.active && seats.shared !== undefined) this.idle.keep(waiter.channel, seats);
      else this.unsubscribe(subscribedChannels(waiter.channel, seats));
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
    this.idle.clear();
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
    deliverTo(seats, message);
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
    const channels = [...this.unsubscribeWhenReady].filter(
      (channel) => !this.channels.has(channel) && !this.sharedChannels.has(channel) && !this.idle.has(channel),
    );
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
