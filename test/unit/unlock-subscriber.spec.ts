import { EventEmitter } from 'node:events';
import type { RedisClient } from '../../lib/redis/redis-client';
import { WAKE_ALL, WAKE_IDS, WAKE_ONE } from '../../lib/redis/unlock-messages';
import { IDLE_CHANNEL_MS } from '../../lib/redis/idle-channels';
import { UnlockSubscriber } from '../../lib/redis/unlock-subscriber';
import { type Sleeper, Waiter } from '../../lib/redis/waiter';

/**
 * The waiters' sleeps without Redis: one shared timer over a heap of deadlines (fake timers, so
 * "no earlier than its deadline" is exact), the wake and cancel rules of a seat, and the order in
 * which the subscriber's line hands out wakes (its connection here only delivers messages).
 */

/** A sleeper that records when and how its sleep ended. */
function recorder(log: Array<{ id: string; at: number; how: string }>, id: string): Sleeper {
  return {
    woke: () => log.push({ id, at: Date.now(), how: 'woke' }),
    failed: (error) => log.push({ id, at: Date.now(), how: `failed: ${error.message}` }),
  };
}

/** A tiny seeded generator, so a failing shuffle can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

describe('Waiter sleeps (the shared deadline heap)', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => {
    // Every test ends with every sleep settled: the heap is shared by the whole process.
    expect(jest.getTimerCount()).toBe(0);
    jest.useRealTimers();
  });

  it('wakes each sleeper at its deadline, never earlier, in deadline order, with one timer for all of them', () => {
    const log: Array<{ id: string; at: number; how: string }> = [];
    const next = random(7);
    const start = Date.now();
    const sleeps = Array.from({ length: 200 }, (_, i) => ({ id: `w${i}`, ms: 1 + Math.floor(next() * 500) }));
    for (const { id, ms } of sleeps) new Waiter('ch').sleepThen(ms, recorder(log, id));
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(600);
    expect(log).toHaveLength(200);
    for (const entry of log) {
      const { ms } = sleeps.find((s) => s.id === entry.id)!;
      expect(entry.how).toBe('woke');
      expect(entry.at - start).toBe(ms); // exactly at the deadline (fake time: no lateness)
    }
    const ats = log.map((entry) => entry.at);
    expect(ats).toEqual([...ats].sort((a, b) => a - b));
  });

  it('a wake ends a sleep at once and takes the waiter out of the heap; the others keep their deadlines', () => {
    const log: Array<{ id: string; at: number; how: string }> = [];
    const start = Date.now();
    const early = new Waiter('ch');
    const middle = new Waiter('ch');
    const late = new Waiter('ch');
    early.sleepThen(100, recorder(log, 'early'));
    middle.sleepThen(200, recorder(log, 'middle'));
    late.sleepThen(300, recorder(log, 'late'));
    expect(early.sleeping).toBe(true);
    jest.advanceTimersByTime(10);
    early.wake(); // the earliest deadline leaves: the timer fires for nobody and re-arms
    expect(early.sleeping).toBe(false);
    jest.advanceTimersByTime(5);
    middle.wake();
    jest.advanceTimersByTime(400);
    expect(log).toEqual([
      { id: 'early', at: start + 10, how: 'woke' },
      { id: 'middle', at: start + 15, how: 'woke' },
      { id: 'late', at: start + 300, how: 'woke' },
    ]);
  });

  it('disarms the timer when the last sleeper leaves, and re-arms it for a new earlier deadline', () => {
    const log: Array<{ id: string; at: number; how: string }> = [];
    const start = Date.now();
    const a = new Waiter('ch');
    a.sleepThen(1_000, recorder(log, 'a'));
    a.wake();
    expect(jest.getTimerCount()).toBe(0);
    const slow = new Waiter('ch');
    const fast = new Waiter('ch');
    slow.sleepThen(1_000, recorder(log, 'slow'));
    fast.sleepThen(50, recorder(log, 'fast')); // earlier than the armed deadline: re-armed, still one timer
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(50);
    expect(log.map((e) => e.id)).toEqual(['a', 'fast']);
    expect(log[1].at).toBe(start + 50);
    jest.advanceTimersByTime(950);
    expect(log.map((e) => e.id)).toEqual(['a', 'fast', 'slow']);
  });

  it('keeps heap order through many interleaved sleeps and wakes (each sleeper ends exactly once)', () => {
    const next = random(42);
    const deadlines = new Map<string, number>();
    const ended = new Map<string, number>();
    const woken = new Set<string>();
    const sleeping: Array<{ id: string; waiter: Waiter }> = [];
    // Ends at its deadline exactly, unless a wake ended it before.
    const checkEnd = (id: string, at: number) => {
      if (woken.has(id)) expect(at).toBeLessThanOrEqual(deadlines.get(id)!);
      else expect(at).toBe(deadlines.get(id));
    };
    for (let step = 0; step < 2_000; step++) {
      const roll = next();
      if (roll < 0.5) {
        const id = `s${step}`;
        const waiter = new Waiter('ch');
        const ms = 1 + Math.floor(next() * 200);
        deadlines.set(id, Date.now() + ms);
        const end = () => {
          expect(ended.has(id)).toBe(false);
          ended.set(id, Date.now());
          checkEnd(id, Date.now());
        };
        waiter.sleepThen(ms, { woke: end, failed: end });
        sleeping.push({ id, waiter });
      } else if (roll < 0.7 && sleeping.length > 0) {
        const [{ id, waiter }] = sleeping.splice(Math.floor(next() * sleeping.length), 1);
        if (waiter.sleeping) woken.add(id);
        waiter.wake();
      } else {
        jest.advanceTimersByTime(1 + Math.floor(next() * 5));
      }
    }
    jest.advanceTimersByTime(300);
    expect(ended.size).toBe(deadlines.size);
    expect(woken.size).toBeGreaterThan(100); // the run exercised removals from the middle of the heap
  });

  it('a wake that comes while the waiter is busy is kept: the next sleep ends at once', () => {
    const log: Array<{ id: string; at: number; how: string }> = [];
    const waiter = new Waiter('ch');
    waiter.wake();
    expect(waiter.pendingWake).toBe(true);
    waiter.sleepThen(10_000, recorder(log, 'kept'));
    expect(log).toEqual([{ id: 'kept', at: Date.now(), how: 'woke' }]);
    expect(waiter.pendingWake).toBe(false);
    expect(jest.getTimerCount()).toBe(0); // it never went into the heap
  });

  it('cancel ends the sleep in progress with the error, and every later sleep at once', async () => {
    const log: Array<{ id: string; at: number; how: string }> = [];
    const waiter = new Waiter('ch');
    waiter.sleepThen(10_000, recorder(log, 'first'));
    waiter.cancel(new Error('shutting down'));
    expect(jest.getTimerCount()).toBe(0);
    waiter.sleepThen(10_000, recorder(log, 'second'));
    expect(log.map((e) => `${e.id} ${e.how}`)).toEqual(['first failed: shutting down', 'second failed: shutting down']);
    await expect(waiter.sleep(10)).rejects.toThrow('shutting down');
    await expect(waiter.waitFor(Promise.resolve(1), 10, 0)).rejects.toThrow('shutting down');
  });

  it('sleep() resolves on a wake or at the deadline', async () => {
    const waiter = new Waiter('ch');
    let done = false;
    const sleeping = waiter.sleep(100).then(() => (done = true));
    jest.advanceTimersByTime(99);
    await Promise.resolve();
    expect(done).toBe(false);
    jest.advanceTimersByTime(1);
    await sleeping;
    const woken = waiter.sleep(100);
    waiter.wake();
    await woken;
  });
});

describe('Waiter.waitFor (a bounded wait for a subscription)', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => {
    expect(jest.getTimerCount()).toBe(0);
    jest.useRealTimers();
  });

  it('resolves with the work, or the fallback when the work fails or the time is up', async () => {
    const waiter = new Waiter('ch');
    await expect(waiter.waitFor(Promise.resolve(true), 100, false)).resolves.toBe(true);
    await expect(waiter.waitFor(Promise.reject(new Error('no')), 100, false)).resolves.toBe(false);
    const never = new Promise<boolean>(() => undefined);
    const bounded = waiter.waitFor(never, 100, false);
    jest.advanceTimersByTime(100);
    await expect(bounded).resolves.toBe(false);
  });

  it('rejects when the waiter is cancelled meanwhile, and keeps a wake for the next sleep', async () => {
    const waiter = new Waiter('ch');
    const never = new Promise<boolean>(() => undefined);
    const first = waiter.waitFor(never, 1_000, false);
    waiter.wake();
    jest.advanceTimersByTime(1_000);
    await expect(first).resolves.toBe(false);
    expect(waiter.pendingWake).toBe(true);
    const second = waiter.waitFor(never, 1_000, false);
    waiter.cancel(new Error('aborted'));
    await expect(second).rejects.toThrow('aborted');
  });
});

/** Only what the subscriber asks of its connection: (un)subscribe, a status and the message events. */
class MessageConnection extends EventEmitter {
  status = 'ready';
  readonly subscribed: string[] = [];
  readonly unsubscribed: string[] = [];

  async subscribe(...channels: string[]): Promise<number> {
    this.subscribed.push(...channels);
    return 1;
  }

  async unsubscribe(...channels: string[]): Promise<number> {
    this.unsubscribed.push(...channels);
    return 0;
  }

  publish(channel: string, message: string): void {
    this.emit('message', channel, message);
  }
}

describe('UnlockSubscriber seats', () => {
  let connection: MessageConnection;
  let subscriber: UnlockSubscriber;
  beforeEach(() => {
    connection = new MessageConnection();
    subscriber = new UnlockSubscriber(connection as unknown as RedisClient, false);
  });

  const pendingWakes = (waiters: Waiter[]) => waiters.map((waiter) => waiter.pendingWake);

  it('subscribes a channel once for all its seats and unsubscribes when the last one leaves', async () => {
    const seats = [subscriber.seat('a'), subscriber.seat('a'), subscriber.seat('b')];
    expect(await subscriber.subscribed(seats[0], 1_000)).toBe(true);
    expect(await subscriber.subscribed(seats[2], 1_000)).toBe(true);
    expect(connection.subscribed).toEqual(['a', 'b']);
    expect(subscriber.waiterCount('a')).toBe(2);
    expect(subscriber.waiterCount()).toBe(3);
    expect(subscriber.channelCount).toBe(2);
    subscriber.leave(seats[0], false);
    expect(connection.unsubscribed).toEqual([]);
    subscriber.leave(seats[1], false);
    subscriber.leave(seats[1], false); // twice: no effect
    expect(connection.unsubscribed).toEqual(['a']);
    expect(subscriber.hasWaiters('a')).toBe(false);
    expect(subscriber.waiterCount()).toBe(1);
    subscriber.leave(seats[2], false);
    expect(subscriber.channelCount).toBe(0);
    expect(connection.unsubscribed).toEqual(['a', 'b']);
  });

  it('keeps a channel subscribed for IDLE_CHANNEL_MS after its last waiter left with the lock: the next wait needs no SUBSCRIBE', async () => {
    jest.useFakeTimers();
    try {
      const first = subscriber.seat('a', undefined, 'a-lock');
      expect(await subscriber.subscribed(first, 1_000)).toBe(true);
      subscriber.leave(first, true);
      // Nobody waits: counted as no channel, but still subscribed (no UNSUBSCRIBE on the hand-off's path).
      expect(subscriber.channelCount).toBe(0);
      expect(subscriber.hasWaiters('a')).toBe(false);
      expect(connection.unsubscribed).toEqual([]);
      jest.advanceTimersByTime(IDLE_CHANNEL_MS / 2);
      const again = subscriber.seat('a', undefined, 'a-lock');
      expect(subscriber.isSubscribed(again)).toBe(true);
      expect(connection.subscribed).toEqual(['a', 'a-lock']);
      // A message on it reaches the new seat.
      connection.publish('a', WAKE_ALL);
      expect(again.pendingWake).toBe(true);
      subscriber.leave(again, true);
      jest.advanceTimersByTime(IDLE_CHANNEL_MS - 1);
      expect(connection.unsubscribed).toEqual([]);
      jest.advanceTimersByTime(1);
      expect(connection.unsubscribed).toEqual(['a', 'a-lock']);
      // After that a new seat subscribes anew.
      const late = subscriber.seat('a', undefined, 'a-lock');
      expect(subscriber.isSubscribed(late)).toBe(false);
      expect(await subscriber.subscribed(late, 1_000)).toBe(true);
      expect(connection.subscribed).toEqual(['a', 'a-lock', 'a', 'a-lock']);
      // An owner's own channel (no lock channel shared on it: a fair waiter's) is not kept.
      const owners = subscriber.seat('owner');
      expect(await subscriber.subscribed(owners, 1_000)).toBe(true);
      subscriber.leave(owners, true);
      expect(connection.unsubscribed).toEqual(['a', 'a-lock', 'owner']);
    } finally {
      jest.useRealTimers();
    }
  });

  it('a channel idle when the connection drops is subscribed again by its next waiter', async () => {
    const first = subscriber.seat('a', undefined, 'a-lock');
    expect(await subscriber.subscribed(first, 1_000)).toBe(true);
    subscriber.leave(first, true);
    connection.emit('close');
    const again = subscriber.seat('a', undefined, 'a-lock');
    expect(subscriber.isSubscribed(again)).toBe(false);
    expect(await subscriber.subscribed(again, 1_000)).toBe(true);
    expect(connection.subscribed).toEqual(['a', 'a-lock', 'a', 'a-lock']);
    subscriber.leave(again, false);
    expect(connection.unsubscribed).toEqual(['a', 'a-lock']);
  });

  it('"one" wakes the longest-waiting seat not woken yet, "all" wakes every seat', () => {
    const line = [subscriber.seat('ch'), subscriber.seat('ch'), subscriber.seat('ch')];
    connection.publish('ch', WAKE_ONE);
    expect(pendingWakes(line)).toEqual([true, false, false]);
    connection.publish('ch', WAKE_ONE);
    expect(pendingWakes(line)).toEqual([true, true, false]);
    connection.publish('other', WAKE_ALL); // another channel: nobody here
    expect(pendingWakes(line)).toEqual([true, true, false]);
    connection.publish('ch', WAKE_ALL);
    expect(pendingWakes(line)).toEqual([true, true, true]);
  });

  it('"ids:" wakes exactly the named local seats, whatever their place in line', () => {
    const line = [subscriber.seat('ch', 'p1'), subscriber.seat('ch', 'p2'), subscriber.seat('ch'), subscriber.seat('ch', 'p4')];
    connection.publish('ch', `${WAKE_IDS}p4`);
    expect(pendingWakes(line)).toEqual([false, false, false, true]);
    connection.publish('ch', `${WAKE_IDS}p2 elsewhere p1`);
    expect(pendingWakes(line)).toEqual([true, true, false, true]);
  });

  it('a seat leaving with an unused wake, or first in line without the lock, passes the turn on', () => {
    const [first, second, third] = [subscriber.seat('ch'), subscriber.seat('ch'), subscriber.seat('ch')];
    connection.publish('ch', WAKE_ONE);
    subscriber.leave(first, true); // its wake was not used: the next seat gets it
    expect(pendingWakes([second, third])).toEqual([true, false]);
    second.pendingWake = false;
    subscriber.leave(second, false); // first in line, left without the lock
    expect(third.pendingWake).toBe(true);
  });

  it('a seat in the middle leaving keeps the order of the others', () => {
    const line = [subscriber.seat('ch'), subscriber.seat('ch'), subscriber.seat('ch')];
    subscriber.leave(line[1]);
    connection.publish('ch', WAKE_ONE);
    connection.publish('ch', WAKE_ONE);
    expect(pendingWakes([line[0], line[2]])).toEqual([true, true]);
    expect(line[1].pendingWake).toBe(false);
  });

  it('a reconnection wakes every waiter of every channel (a release may have gone unheard)', () => {
    const seats = [subscriber.seat('a'), subscriber.seat('b')];
    connection.emit('ready');
    expect(pendingWakes(seats)).toEqual([true, true]);
  });

  it('close cancels every seat with the error, and later seats fail with it', async () => {
    const seat = subscriber.seat('ch');
    const sleeping = seat.sleep(60_000);
    subscriber.close(new Error('module closing'));
    await expect(sleeping).rejects.toThrow('module closing');
    expect(() => subscriber.seat('ch')).toThrow('module closing');
    expect(subscriber.channelCount).toBe(0);
    expect(connection.unsubscribed).toEqual([]); // the connection goes away as a whole
  });
});
