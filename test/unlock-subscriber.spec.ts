import { once } from 'node:events';
import Redis from 'ioredis';
import { UnlockSubscriber } from '../lib/redis/unlock-subscriber';
import { startRedis, type TestRedis } from './support/redis-server';
import { RestartableRedis } from './support/restartable-redis';
import { waitFor } from './support/wait-for';

/**
 * The subscriber connection against a real Redis, where its subscriptions meet ioredis's
 * connection states: what the server ends up subscribed to is what the seats say.
 */
describe('UnlockSubscriber on a real connection', () => {
  let redis: TestRedis;
  let admin: Redis;

  beforeAll(async () => {
    redis = await startRedis();
    admin = redis.client();
  });

  afterAll(async () => {
    await redis?.stop();
  });

  /** The server's subscribed channels once everything `connection` sent before now was answered. */
  async function serverChannels(connection: Redis): Promise<string[]> {
    await connection.ping();
    return ((await admin.pubsub('CHANNELS')) as string[]).sort();
  }

  it('a seat left while the connection was still coming up leaves no subscription on the server once it is ready', async () => {
    const connection = new Redis(redis.url, { lazyConnect: true });
    const subscriber = new UnlockSubscriber(connection, false);
    try {
      const kept = subscriber.seat('kept-channel');
      const left = subscriber.seat('left-channel'); // both subscriptions wait for 'ready'
      subscriber.leave(left);
      await once(connection, 'ready');
      await waitFor(() => subscriber.subscribed(kept, 0), { what: 'the kept seat subscribed' });
      expect(await serverChannels(connection)).toEqual(['kept-channel']);
      subscriber.leave(kept);
      expect(await serverChannels(connection)).toEqual([]);
    } finally {
      connection.disconnect();
    }
  });

  it('after a reconnect: a seat taken and left while the connection was down leaves nothing subscribed, a seat kept is subscribed again', async () => {
    const connection = new Redis(redis.url, { lazyConnect: true, connectionName: 'subscriber-under-test' });
    const subscriber = new UnlockSubscriber(connection, false);
    try {
      const kept = subscriber.seat('kept-across');
      expect(await subscriber.subscribed(kept, 5_000)).toBe(true);
      const closed = once(connection, 'close');
      await admin.client('KILL', 'SKIPME', 'yes', 'TYPE', 'pubsub');
      await closed;
      expect(connection.status).not.toBe('ready');
      const left = subscriber.seat('left-while-down');
      subscriber.leave(left);
      await once(connection, 'ready');
      await waitFor(async () => (await serverChannels(connection)).includes('kept-across'), { what: 'the kept channel subscribed again' });
      expect(await serverChannels(connection)).toEqual(['kept-across']);
    } finally {
      connection.disconnect();
    }
  });

  it('a seat left during the reconnection handshake leaves nothing subscribed once ioredis re-subscribed what it had', async () => {
    const connection = new Redis(redis.url, { lazyConnect: true, connectionName: 'subscriber-in-handshake' });
    const subscriber = new UnlockSubscriber(connection, false);
    try {
      const left = subscriber.seat('left-in-handshake');
      const kept = subscriber.seat('kept-through-handshake');
      expect(await subscriber.subscribed(left, 5_000)).toBe(true);
      expect(await subscriber.subscribed(kept, 5_000)).toBe(true);
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
      await waitFor(async () => (await serverChannels(connection)).length === 1, { what: 'one channel subscribed', timeoutMs: 5_000 }).catch(() => undefined);
      expect(await serverChannels(connection)).toEqual(['kept-through-handshake']);
    } finally {
      connection.disconnect();
    }
  });

  it('an UNSUBSCRIBE that ioredis gave up on during an outage is sent again once the server is back', async () => {
    const server = await RestartableRedis.start();
    // maxRetriesPerRequest 0: ioredis fails a queued command at the first failed reconnection (the
    // default, 20, fails it after about ten seconds down).
    const connection = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    const subscriber = new UnlockSubscriber(connection, false);
    try {
      const left = subscriber.seat('left-in-outage');
      const kept = subscriber.seat('kept-in-outage');
      expect(await subscriber.subscribed(left, 5_000)).toBe(true);
      expect(await subscriber.subscribed(kept, 5_000)).toBe(true);
      await server.kill();
      await waitFor(() => connection.status === 'reconnecting', { what: 'the connection reconnecting' });
      subscriber.leave(left); // UNSUBSCRIBE queued while down
      // Two failed reconnections: the queued UNSUBSCRIBE has been failed by then (events.once would
      // reject on the 'error' each failed attempt emits).
      const reconnecting = () => new Promise((resolve) => connection.once('reconnecting', resolve));
      await reconnecting();
      await reconnecting();
      await server.restart();
      await once(connection, 'ready');
      const channels = async () => {
        await connection.ping();
        return ((await server.client().pubsub('CHANNELS')) as string[]).sort();
      };
      // ioredis subscribes both again by itself; the left one must be dropped after.
      await waitFor(async () => (await channels()).length === 1, { what: 'one channel subscribed', timeoutMs: 5_000 }).catch(() => undefined);
      expect(await channels()).toEqual(['kept-in-outage']);
    } finally {
      connection.disconnect();
      await server.dispose();
    }
  });
});
