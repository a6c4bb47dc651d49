import type { ChannelSeats } from './channel-seats';

/**
 * How long a channel stays subscribed after its last waiter got the lock (ms). A process that
 * waits on a lock once usually waits on it again soon (a hot order, a queue consumer): its next wait
 * then finds the channel subscribed, and neither that wait nor the hand-off that ended this one
 * pays for an UNSUBSCRIBE and a SUBSCRIBE. Measured in bench/ (W3, W4): see docs/benchmarks.md.
 */
export const IDLE_CHANNEL_MS = 1_000;
/** Most channels kept idle at once per module instance; beyond that the oldest is unsubscribed at once. */
export const MAX_IDLE_CHANNELS = 1_000;

/**
 * Subscriptions kept for `IDLE_CHANNEL_MS` after their last waiter left with the lock, so that the
 * hand-off's grantee does not send an UNSUBSCRIBE between the grant and its body, and the next wait
 * of this process on the same lock needs no SUBSCRIBE. Only a process's channel of a lock (plain,
 * read-write, semaphore waiters) idles, and only once its last waiter left with the lock: a wait that
 * ended without it (timed out, cancelled) and an owner's own channel (a fair waiter's) unsubscribe at
 * once, as before. Nobody sits on an idle channel, so a message on it is dropped, as on an
 * unsubscribed one.
 */
export class IdleChannels {
  private readonly idle = new Map<string, ChannelSeats>();
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    /** Unsubscribes a channel (and the lock's own channel it shares) whose idle time is over. */
    private readonly unsubscribe: (channel: string, seats: ChannelSeats) => void,
  ) {}

  has(channel: string): boolean {
    return this.idle.has(channel);
  }

  /** Keeps `channel` (whose last seat just left) subscribed for a while. */
  keep(channel: string, seats: ChannelSeats): void {
    if (this.idle.size >= MAX_IDLE_CHANNELS) {
      const oldest = this.idle.keys().next().value as string;
      this.end(oldest);
    }
    this.idle.set(channel, seats);
    const timer = setTimeout(() => this.end(channel), IDLE_CHANNEL_MS);
    timer.unref?.();
    this.timers.set(channel, timer);
  }

  /**
   * The idle seats of `channel`, taken back for a new waiter when they were subscribed with the same
   * shared channel (they stay subscribed: no SUBSCRIBE); otherwise `channel` is unsubscribed now and
   * undefined is returned (the caller subscribes anew, after that UNSUBSCRIBE on the same connection).
   */
  takeBack(channel: string, shared: string | undefined): ChannelSeats | undefined {
    const seats = this.idle.get(channel);
    if (!seats) return undefined;
    if (seats.shared !== shared) {
      this.end(channel);
      return undefined;
    }
    this.forget(channel);
    return seats;
  }

  /** The connection closed: the idle channels are subscribed no longer (ioredis renews them on reconnect). */
  connectionClosed(): void {
    for (const seats of this.idle.values()) {
      seats.active = false;
      seats.pending = undefined;
    }
  }

  /** The subscriber closes: nothing is unsubscribed (the connection goes away as a whole). */
  clear(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.idle.clear();
  }

  private end(channel: string): void {
    const seats = this.idle.get(channel);
    if (!seats) return;
    this.forget(channel);
    this.unsubscribe(channel, seats);
  }

  private forget(channel: string): void {
    clearTimeout(this.timers.get(channel));
    this.timers.delete(channel);
    this.idle.delete(channel);
  }
}
