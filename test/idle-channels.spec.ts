import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService } from '../lib';
import { LockEngine } from '../lib/engine/lock-engine';
import { IDLE_CHANNEL_MS } from '../lib/redis/idle-channels';
import { createLockApp, waitUntil } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';

/**
 * A process's channel of a lock stays subscribed for IDLE_CHANNEL_MS after its last waiter got the
 * lock (lib/redis/idle-channels.ts): hand-offs back and forth between two processes send no
 * UNSUBSCRIBE and, after each side's first wait, no SUBSCRIBE; once nobody waits for that long, the
 * channel is unsubscribed. Counted by Redis itself (INFO commandstats).
 */
describe('idle channels (a hand-off sends no UNSUBSCRIBE, the next wait no SUBSCRIBE)', () => {
  let redis: TestRedis;
  let raw: Redis;
  let one: TestingModule;
  let two: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    one = await createLockApp({ redis: redis.url });
    two = await createLockApp({ redis: redis.url });
  });

  afterAll(async () => {
    await one?.close();
    await two?.close();
    raw?.disconnect();
    await redis?.stop();
  });

  const calls = async (command: string): Promise<number> => {
    const match = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(await raw.info('commandstats'));
    return match ? Number(match[1]) : 0;
  };
  const channelOf = (app: TestingModule, name: string) => `lock:{${name}}:channel:${app.get(LockEngine).ids.clientId}`;
  const listeners = async (channel: string): Promise<number> => Number(((await raw.pubsub('NUMSUB', channel)) as [string, number])[1]);

  it('10 hand-offs between two processes: each process subscribes once and unsubscribes only after IDLE_CHANNEL_MS of nobody waiting', async () => {
    const name = 'idle:ping-pong';
    const apps = [one, two];
    await raw.config('RESETSTAT');
    // Each round: one process holds, the other waits in line and is handed the lock by the release.
    let holder = apps[0].get(LockService).getLock(name);
    await holder.lock();
    for (let round = 1; round <= 10; round++) {
      const waiterApp = apps[round % 2];
      const waiter = waiterApp.get(LockService).getLock(name);
      const waiting = waiter.tryLock({ waitTime: 10_000 });
      await waitUntil(() => waiterApp.get(LockEngine).subscriber.sleepingCount() === 1);
      await holder.unlock();
      expect(await waiting).toBe(true);
      holder = waiter;
    }
    await holder.unlock();
    expect(await calls('subscribe')).toBe(2);
    expect(await calls('unsubscribe')).toBe(0);
    // Both channels are still heard, by nobody waiting...
    expect(await listeners(channelOf(one, name))).toBe(1);
    expect(await listeners(channelOf(two, name))).toBe(1);
    expect(one.get(LockEngine).subscriber.channelCount + two.get(LockEngine).subscriber.channelCount).toBe(0);
    // ...until IDLE_CHANNEL_MS passed (generous bound: a hang, not a timing, is what fails here).
    await waitUntil(async () => (await listeners(channelOf(one, name))) + (await listeners(channelOf(two, name))) === 0, IDLE_CHANNEL_MS + 10_000);
    expect(await calls('unsubscribe')).toBe(2);
  }, 60_000);

  it('a wait that ends without the lock unsubscribes at once', async () => {
    const name = 'idle:timeout';
    const holder = one.get(LockService).getLock(name);
    await holder.lock();
    await raw.config('RESETSTAT');
    expect(await two.get(LockService).getLock(name).tryLock({ waitTime: 300 })).toBe(false);
    await waitUntil(async () => (await calls('unsubscribe')) === 1, 5_000);
    expect(await listeners(channelOf(two, name))).toBe(0);
    await holder.unlock();
  });
});
