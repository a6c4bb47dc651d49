import { GRANT, LEGACY_GRANT, legacyGrantee, NEXT, parseGrant, REDISSON_WAKE_ALL, WAKE_ALL, WAKE_IDS } from './unlock-messages';
import type { Waiter } from './waiter';

/** One channel's local waiters (its seats, longest-waiting first) and its subscription. */
export interface ChannelSeats {
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

/** What one seat list subscribes: its channel, and the lock's own channel when it shares it. */
export function subscribedChannels(channel: string, seats: ChannelSeats): string[] {
  return seats.shared === undefined ? [channel] : [channel, seats.shared];
}

/** The seats of a channel, longest-waiting first (a snapshot: waking may make seats leave). */
export function seatsOf(seats: ChannelSeats): Waiter[] {
  const all: Waiter[] = [];
  for (let waiter = seats.head; waiter; waiter = waiter.next) all.push(waiter);
  return all;
}

/** What `message` asks of the seats of the channel it came on (see unlock-messages.ts). */
export function deliverTo(seats: ChannelSeats, message: string): void {
  if (message === WAKE_ALL) for (const waiter of seatsOf(seats)) waiter.wake();
  else if (message.startsWith(GRANT)) handOver(seats, message);
  else if (message.startsWith(NEXT)) nextInLine(seats, message);
  else if (message.startsWith(LEGACY_GRANT)) wakeNamed(seats, [legacyGrantee(message)]);
  else if (message.startsWith(WAKE_IDS)) wakeNamed(seats, message.slice(WAKE_IDS.length).split(' '));
  // Redisson's messages (layout 'redisson'): '0' an unlock (one waiter per process tries, as one
  // per JVM does), '1' a write unlock and a semaphore's new permit count (every waiter tries).
  else if (REDISSON_WAKE_ALL.test(message)) for (const waiter of seatsOf(seats)) waiter.wake();
  else wakeOne(seats);
}

/** Gives a lock a release handed over to the waiter it names, if that waiter waits here. */
function handOver(seats: ChannelSeats, message: string): void {
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
    return checkAfterGrantLease(seats, handed.grant.grantLeaseMs);
  }
  // The others first: taking the grant may end the granted waiter's seat at once.
  if (sameOwner) for (const waiter of sameOwner) waiter.wake();
  granted.handOver(handed.grant);
}

/**
 * One seat here retries when a grant lease of `ms` ends: a confirmed holder answers with its TTL;
 * a grantee that died leaves the lock free, and that attempt hands it on.
 */
function checkAfterGrantLease(seats: ChannelSeats, ms: number): void {
  clearTimeout(seats.handOverCheck);
  seats.handOverCheck = setTimeout(() => {
    seats.handOverCheck = undefined;
    wakeOne(seats);
  }, ms + 1);
  seats.handOverCheck.unref?.();
}

/**
 * The waiter a `NEXT` notice names, if it waits here, sleeps no longer than the grant lease ahead
 * of it. `next:*` (on the lock's own channel: the line's head was all the grantee's process) arms
 * one check here for the lease's end, as a grant to a waiter elsewhere does.
 */
function nextInLine(seats: ChannelSeats, message: string): void {
  const space = message.lastIndexOf(' ');
  const id = message.slice(NEXT.length, space);
  const ms = Number(message.slice(space + 1));
  if (!(ms >= 0)) return;
  if (id === '*') return checkAfterGrantLease(seats, ms);
  for (let waiter = seats.head; waiter; waiter = waiter.next) {
    if (waiter.id === id) return waiter.wakeWithin(ms + 1);
  }
}

/** Wakes the local waiters among `ids` (the others wait in other processes). */
function wakeNamed(seats: ChannelSeats, ids: readonly string[]): void {
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
export function wakeOne(seats: ChannelSeats): void {
  let waiter = seats.head;
  while (waiter && waiter.pendingWake) waiter = waiter.next;
  waiter?.wake();
}
