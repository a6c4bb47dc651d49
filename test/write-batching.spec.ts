import type { Socket } from 'node:net';
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService } from '../lib';
import { LockEngine } from '../lib/engine/lock-engine';
import { createLockApp, waitUntil } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';

/** Counts the writes that reach the command connection's socket (one per `write`/`writev`). */
function countSocketWrites(socket: Socket): { readonly writes: number } {
  const counter = { writes: 0 };
  const target = socket as unknown as Record<'_write' | '_writev', (...args: unknown[]) => unknown>;
  for (const method of ['_write', '_writev'] as const) {
    const original = target[method];
    target[method] = function (this: unknown, ...args: unknown[]) {
      counter.writes += 1;
      return original.apply(this, args);
    };
  }
  return counter;
}

/**
 * Concurrent callers' scripts share socket writes (lib/redis/write-batching.ts), while a lone
 * caller's command is written at once: proven by counting the writes that reach the socket of a
 * real connection.
 */
describe('write batching on the command connection', () => {
  let redis: TestRedis;
  let app: TestingModule;
  let locks: LockService;
  let socket: Socket;

  beforeAll(async () => {
    redis = await startRedis();
    app = await createLockApp({ redis: redis.url });
    locks = app.get(LockService);
    await locks.run('warm-up', () => undefined); // connects and loads the scripts
    await waitUntil(() => app.get(LockEngine).releasesInFlight.size === 0); // run does not wait for its release
    socket = (app.get(LockEngine).client as Redis).stream as Socket;
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('writes a lone caller\'s command at once (no deferred write, no added latency)', async () => {
    const counter = countSocketWrites(socket);
    const acquiring = locks.getLock('lone').tryLock();
    // Handed to the socket in the same synchronous step, nothing corked for later.
    expect(counter.writes).toBe(1);
    expect(socket.writableCorked).toBe(0);
    await expect(acquiring).resolves.toBe(true);
    await locks.getLock('lone').forceUnlock();
  });

  it('sends the scripts of 64 concurrent runs in far fewer writes, each run once and every lock released', async () => {
    const counter = countSocketWrites(socket);
    let inside = 0;
    const runs = Array.from({ length: 64 }, (_, i) =>
      locks.run(`batch:${i}`, () => {
        inside += 1;
        return i;
      }),
    );
    await expect(Promise.all(runs)).resolves.toEqual(Array.from({ length: 64 }, (_, i) => i));
    expect(inside).toBe(64);
    // The runs resolved once their bodies did; their releases are on their way.
    await waitUntil(() => app.get(LockEngine).releasesInFlight.size === 0);
    // 128 scripts (an acquire and a release per run); without batching each is a write of its own.
    expect(counter.writes).toBeLessThanOrEqual(40);
    expect(socket.writableCorked).toBe(0);
    const stillLocked = await Promise.all(runs.map((_, i) => locks.getLock(`batch:${i}`).isLocked()));
    expect(stillLocked.filter(Boolean)).toEqual([]);
  });

  it('under Jest fake timers (a fake process.nextTick) nothing is corked: sequential and concurrent runs complete', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] }); // setImmediate: the test's own waits below
    try {
      for (let i = 0; i < 5; i++) expect(await locks.run(`faked:${i % 2}`, () => i)).toBe(i);
      const results = await Promise.all(Array.from({ length: 16 }, (_, i) => locks.run(`faked-many:${i}`, () => i)));
      expect(results).toEqual(Array.from({ length: 16 }, (_, i) => i));
      expect(socket.writableCorked).toBe(0);
      while (app.get(LockEngine).releasesInFlight.size > 0) await new Promise((resolve) => setImmediate(resolve));
    } finally {
      jest.useRealTimers();
    }
    expect(await locks.getLock('faked:0').isLocked()).toBe(false);
  });
});
