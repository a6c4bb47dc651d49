import type { TestingModule } from '@nestjs/testing';
import Redis from 'ioredis';
import { LockService, ReadWriteLockService, type Lock } from '../../lib';
import { LockEngine } from '../../lib/engine/lock-engine';
import { deadGranteeDelay } from '../support/dead-grantee';
import { createLockApp, sleep, waitersQueued, waitUntil } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * A grant wakes only the process whose waiter it names (docs/hand-off-protocol.md): it goes out on
 * that process's channel for the lock, not on the lock's channel that every waiting process
 * subscribes. The next waiter in line is told how long the grant lease runs, so a waiter behind a
 * grantee that died (a fair one too, whose grant goes to its own channel) asks again when that
 * lease ends, not when the lease it was told last would have ended.
 */
const WAITER_TIMEOUT_MS = 1_000;

/** Counts the line attempts (EVALSHA with a line entry) `client` sends from now on. */
function countAttempts(client: Redis): { count: number } {
  const counter = { count: 0 };
  const target = client as unknown as { sendCommand(command: { name: string; args: unknown[] }, stream?: unknown): unknown };
  const original = target.sendCommand.bind(target);
  target.sendCommand = (command, stream) => {
    if (command.name === 'evalsha') counter.count += 1;
    return original(command, stream);
  };
  return counter;
}

describe('A grant wakes only the granted process', () => {
  let redis: TestRedis;
  let raw: Redis;
  let apps: TestingModule[] = [];
  const clients: Redis[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
  });
  afterEach(async () => {
    for (const app of apps) await app.close();
    apps = [];
    for (const client of clients.splice(0)) client.disconnect();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  const appWithClient = async (): Promise<{ app: TestingModule; client: Redis }> => {
    const client = new Redis(redis.url);
    clients.push(client);
    const app = await createLockApp({ redis: client, fairLockWaiterTimeout: WAITER_TIMEOUT_MS });
    apps.push(app);
    return { app, client };
  };

  it.each(['reentrant', 'write'] as const)('%s: the grant goes to the granted process alone; the process behind it sends nothing', async (kind) => {
    const lockOf = (app: TestingModule, name: string): Lock =>
      kind === 'write' ? app.get(ReadWriteLockService).getReadWriteLock(name).writeLock() : app.get(LockService).getLock(name);
    const channelOf = (name: string) => (kind === 'write' ? `lock:rw:{${name}}:channel` : `lock:{${name}}:channel`);
    const name = `only-granted-${kind}`;
    const holder = await appWithClient();
    const b = await appWithClient();
    const c = await appWithClient();
    const listener = redis.client();
    const heard: Array<[string, string]> = [];
    listener.on('pmessage', (_pattern: string, channel: string, message: string) => heard.push([channel, message]));
    await listener.psubscribe(`${channelOf(name)}*`);

    const held = lockOf(holder.app, name);
    await held.lock(); // a watchdog lease: the waiters sleep long
    const bLock = lockOf(b.app, name);
    const bAcquired = bLock.tryLock({ waitTime: 20_000 });
    await waitersQueued(b.app, 1);
    const cLock = lockOf(c.app, name);
    const cAcquired = cLock.tryLock({ waitTime: 20_000 });
    await waitersQueued(c.app, 1);

    const cAttempts = countAttempts(c.client);
    await held.unlock();
    expect(await bAcquired).toBe(true);
    await sleep(200);
    // C was not woken: it sent nothing while the lock went to B.
    expect(cAttempts.count).toBe(0);
    const bClient = b.app.get(LockEngine).ids.clientId;
    const cClient = c.app.get(LockEngine).ids.clientId;
    const grants = heard.filter(([, message]) => message.startsWith('granted:'));
    expect(grants.map(([channel]) => channel)).toEqual([`${channelOf(name)}:${bClient}`]);
    // C, next in line, only heard how long B's grant lease runs.
    expect(heard.filter(([channel]) => channel === `${channelOf(name)}:${cClient}`).map(([, message]) => message.split(' ')[0].split(':')[0])).toEqual(['next']);

    await bLock.unlock();
    expect(await cAcquired).toBe(true);
    await cLock.unlock();
    listener.disconnect();
  }, 30_000);

  it('a plain waiter behind a fair grantee that died asks again when the grant lease ends, not at the holder’s lease', async () => {
    const { app } = await appWithClient();
    const { app: other } = await appWithClient();
    const name = 'plain-behind-dead-fair';
    const lockKey = `lock:{${name}}`;
    const holder = app.get(LockService).getLock(name);
    await holder.lock(); // watchdog lease, 30 s: what the plain waiter is told when it joins
    const next = other.get(LockService).getLock(name);
    const delay = await deadGranteeDelay({
      fixtureArgs: [redis.url, 'fair', name, 'wait', '0', '0'],
      lineLength: async () => raw.zcard(`${lockKey}:deadlines`),
      next,
      release: () => holder.unlock(),
      handedToChild: async () => {
        await waitUntil(async () => (await raw.pttl(lockKey)) <= WAITER_TIMEOUT_MS);
      },
    });
    // The grant lease plus slack for a loaded machine: not the holder's 30 s lease.
    expect(delay).toBeLessThan(WAITER_TIMEOUT_MS + 2_000);
  }, 40_000);
});
