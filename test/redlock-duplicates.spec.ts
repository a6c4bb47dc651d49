import Redis from 'ioredis';
import { LockError, LockService } from '../lib';
import { createLockApp } from './support/lock-app';
import type { TestRedis } from './support/redis-server';
import { startRedisServers, stopRedisServers } from './support/redis-servers';

/**
 * RedLock counts each server once: two `redlock.clients` entries reaching one server (compared by
 * the server's INFO `run_id`) are refused at bootstrap, or, for a master unreachable then, before
 * the first grant that would count it.
 */
describe('RedLock refuses two entries of one server', () => {
  let servers: TestRedis[];
  const clients: Redis[] = [];

  beforeAll(async () => {
    servers = await startRedisServers(2);
  });
  afterAll(async () => {
    for (const client of clients) client.disconnect();
    await stopRedisServers(servers);
  });

  const duplicateOf = (first: number, second: number) =>
    new RegExp(`redlock\\.clients\\[${first}\\] and redlock\\.clients\\[${second}\\] reach the same Redis server \\(run_id [0-9a-f]{40}\\)`);

  it('two URLs of one server (127.0.0.1 and localhost) fail the start, naming both entries', async () => {
    const [a, b] = servers;
    const start = createLockApp({ redis: a.url, redlock: { clients: [a.url, b.url, `redis://localhost:${b.port}`] } });
    await expect(start).rejects.toThrow(LockError);
    await expect(createLockApp({ redis: a.url, redlock: { clients: [a.url, b.url, `redis://localhost:${b.port}`] } })).rejects.toThrow(duplicateOf(1, 2));
  });

  it('an options object and a URL of one server, and two client instances of one server, fail the start', async () => {
    const [a, b] = servers;
    await expect(createLockApp({ redis: a.url, redlock: { clients: [{ host: '127.0.0.1', port: a.port }, b.url, a.url] } })).rejects.toThrow(
      duplicateOf(0, 2),
    );
    const first = new Redis(b.url);
    const second = new Redis(b.url);
    clients.push(first, second);
    await expect(createLockApp({ redis: a.url, redlock: { clients: [first, a.url, second] } })).rejects.toThrow(duplicateOf(0, 2));
    // The user's clients are left open: the library never closes a client it was given.
    expect(await first.ping()).toBe('PONG');
  });

  it('distinct servers start and grant as before', async () => {
    const app = await createLockApp({ redis: servers[0].url, redlock: { clients: servers.map((s) => s.url) } });
    try {
      const lock = app.get(LockService).getRedLock('distinct');
      expect(await lock.tryLock({ leaseTime: 5_000 })).toBe(true);
      await lock.unlock();
    } finally {
      await app.close();
    }
  });

  it('a duplicate unreachable at bootstrap is refused before the first grant counts it', async () => {
    const [a, b] = servers;
    // b does not answer at start (paused): the app starts, b's entries are not identified yet.
    b.pause();
    let app;
    try {
      app = await createLockApp({
        redis: a.url,
        redlock: { clients: [a.url, b.url, `redis://localhost:${b.port}`], masterTimeout: 300 },
      });
    } finally {
      b.resume();
    }
    try {
      const lock = app.get(LockService).getRedLock('late-duplicate');
      // Without the check, a and the two entries of b would make a "majority" of 3 out of one real vote and one server.
      await expect(lock.tryLock({ waitTime: 2_000, leaseTime: 5_000 })).rejects.toThrow(duplicateOf(1, 2));
      expect(await lock.isHeldByCurrentOwner()).toBe(false);
      const raw = a.client();
      try {
        expect(await raw.exists('lock:{late-duplicate}')).toBe(0);
      } finally {
        raw.disconnect();
      }
    } finally {
      await app.close();
    }
  });
});
