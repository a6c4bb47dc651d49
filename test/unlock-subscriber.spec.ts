import { Logger } from '@nestjs/common';
import { once } from 'node:events';
import Redis, { type RedisOptions } from 'ioredis';
import { UnlockSubscriber } from '../lib/redis/unlock-subscriber';
import type { Waiter } from '../lib/redis/waiter';
import { startRedis, type TestRedis } from './support/redis-server';
import { ReplyDroppingProxy } from './support/reply-dropping-proxy';
import { waitFor } from './support/wait-for';

/**
 * The subscriber connection against a real Redis, where its subscriptions meet ioredis's
 * connection states: what the server ends up subscribed to is what the seats say.
 */
describe('UnlockSubscriber on a real connection', () => {
  let redis: TestRedis;
  let admin: Redis;

  beforeAll(async () => {
    // The subscriber logs a failed UNSUBSCRIBE at debug level; no application here sets a logger.
    Logger.overrideLogger(false);
    redis = await startRedis();
    admin = redis.client();
  });

  afterAll(async () => {
    Logger.overrideLogger(true);
    await redis?.stop();
  });

  /**
   * The server's subscribed channels once everything `connection` sent before now was answered.
   * After 'ready' that includes what ioredis re-subscribed and what the subscriber's own 'ready'
   * handler sent (registered before any test's listener), so no wait is needed.
   */
  async function serverChannels(connection: Redis): Promise<string[]> {
    await connection.ping();
    return ((await admin.pubsub('CHANNELS')) as string[]).sort();
  }

  /** A subscriber on a lazy connection of its own to `url`, closed after `test`. */
  async function withSubscriber(
    url: string,
    options: RedisOptions,
    test: (subscriber: UnlockSubscriber, connection: Redis) => Promise<void>,
  ): Promise<void> {
    const connection = new Redis(url, { ...options, lazyConnect: true });
    try {
      await test(new UnlockSubscriber(connection, false), connection);
    } finally {
      connection.disconnect();
    }
  }

  /** Seats on each channel, once each subscription took. */
  async function subscribedSeats(subscriber: UnlockSubscriber, ...channels: string[]): Promise<Waiter[]> {
    const seats = channels.map((channel) => subscriber.seat(channel));
    for (const seat of seats) expect(await subscriber.subscribed(seat, 5_000)).toBe(true);
    return seats;
  }

  it('a seat left while the connection was still coming up leaves no subscription on the server once it is ready', async () => {
    await withSubscriber(redis.url, {}, async (subscriber, connection) => {
      const kept = subscriber.seat('kept-channel');
      const left = subscriber.seat('left-channel'); // both subscriptions wait for 'ready'
      subscriber.leave(left);
      await once(connection, 'ready');
      await waitFor(() => subscriber.subscribed(kept, 0), { what: 'the kept seat subscribed' });
      expect(await serverChannels(connection)).toEqual(['kept-channel']);
      subscriber.leave(kept);
      expect(await serverChannels(connection)).toEqual([]);
    });
  });

  it('after a reconnect: a seat taken and left while the connection was down leaves nothing subscribed, a seat kept is subscribed again', async () => {
    await withSubscriber(redis.url, { connectionName: 'subscriber-under-test' }, async (subscriber, connection) => {
      await subscribedSeats(subscriber, 'kept-across');
      const closed = once(connection, 'close');
      await admin.client('KILL', 'SKIPME', 'yes', 'TYPE', 'pubsub');
      await closed;
      expect(connection.status).not.toBe('ready');
      const left = subscriber.seat('left-while-down');
      subscriber.leave(left);
      await once(connection, 'ready');
      expect(await serverChannels(connection)).toEqual(['kept-across']);
    });
  });

  it('a seat left during the reconnection handshake leaves nothing subscribed once ioredis re-subscribed what it had', async () => {
    await withSubscriber(redis.url, { connectionName: 'subscriber-in-handshake' }, async (subscriber, connection) => {
      const [left] = await subscribedSeats(subscriber, 'left-in-handshake', 'kept-through-handshake');
      await admin.client('KILL', 'SKIPME', 'yes', 'TYPE', 'pubsub');
      // 'connect': the socket is open and ioredis's ready check is on its way; 'ready' comes after.
      const leftInHandshake = new Promise<string>((resolve) =>
        connection.once('connect', () => {
          subscriber.leave(left);
          resolve(connection.status);
        }),
      );
      expect(await leftInHandshake).toBe('connect');
      await once(connection, 'ready');
      expect(await serverChannels(connection)).toEqual(['kept-through-handshake']);
    });
  });

  it('an UNSUBSCRIBE that ioredis failed (no answer before the connection dropped) is sent again once it is back', async () => {
    const proxy = await ReplyDroppingProxy.start(redis.port);
    // maxRetriesPerRequest 0: ioredis fails a command still unanswered when the connection drops
    // (the default, 20, fails it after about ten seconds of failed reconnections).
    try {
      await withSubscriber(proxy.url, { maxRetriesPerRequest: 0 }, async (subscriber, connection) => {
        const [left] = await subscribedSeats(subscriber, 'left-unanswered', 'kept-unanswered');
        proxy.dropReplies = true;
        subscriber.leave(left); // Redis runs the UNSUBSCRIBE; its answer is lost
        await waitFor(async () => !((await admin.pubsub('CHANNELS')) as string[]).includes('left-unanswered'), { what: 'the UNSUBSCRIBE run' });
        proxy.dropReplies = false;
        proxy.resetConnections();
        await once(connection, 'ready');
        // ioredis subscribes both again by itself (it never saw the UNSUBSCRIBE answered).
          expect(await serverChannels(connection)).toEqual(['kept-unanswered']);
      });
    } finally {
      await proxy.close();
    }
  });
});
