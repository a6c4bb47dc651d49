import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService, LockUnavailableError } from '../../lib';
import { waitUntil } from '../support/lock-app';
import { ReplyDroppingProxy } from '../support/reply-dropping-proxy';
import { RestartableRedis } from '../support/restartable-redis';
import { createFaultApp, timed } from './fault-app';

/**
 * Replies lost on the way back (the command ran, the client never heard): the library stops
 * waiting after `commandTimeout`, leaves no hold behind that nobody owns, and when ioredis resends
 * what it got no answer for after a reconnect, the outcome is the same as if it was sent once.
 */
describe('faults: lost replies and resends (a TCP proxy that swallows replies)', () => {
  const COMMAND_TIMEOUT = 300;
  let redis: RestartableRedis;
  let proxy: ReplyDroppingProxy;
  let app: TestingModule;
  let locks: LockService;
  let raw: Redis;
  let counter = 0;
  const fresh = () => `lost-reply-${++counter}`;
  const lockKey = (name: string) => `lock:{${name}}`;

  beforeAll(async () => {
    redis = await RestartableRedis.start();
    proxy = await ReplyDroppingProxy.start(redis.port);
    ({ app } = await createFaultApp({ redis: proxy.url, commandTimeout: COMMAND_TIMEOUT }));
    locks = app.get(LockService);
    raw = redis.client();
  });
  afterEach(() => {
    proxy.dropReplies = false;
  });
  afterAll(async () => {
    await app?.close();
    await proxy?.close();
    await redis?.dispose();
  });

  /** Lets replies through again; the connection's reply stream is out of step, so reset it too. */
  function restoreReplies(): void {
    proxy.dropReplies = false;
    proxy.resetConnections();
  }

  it('an acquisition whose replies are lost rejects within its bound and leaves no hold nobody owns, even after resends', async () => {
    const name = fresh();
    proxy.dropReplies = true;
    const outcome = await timed(locks.getLock(name).tryLock({ waitTime: 600 }));
    expect(outcome.error).toBeInstanceOf(LockUnavailableError);
    expect(outcome.ms).toBeLessThan(600 + COMMAND_TIMEOUT + 1_500);
    // Redis ran the attempts (the first one granted the lock), then the undo sent after them.
    await waitUntil(async () => (await raw.exists(lockKey(name))) === 0, 3_000);
    // After a reset ioredis resends every unanswered command, attempts and undo alike, in order.
    const resentBefore = await scriptCalls();
    restoreReplies();
    await waitUntil(async () => (await scriptCalls()) > resentBefore, 5_000);
    expect(await locks.run(name, async () => 'ran', { waitTime: 2_000 })).toBe('ran');
    // run resolves with its body; its release follows on the connection.
    await waitUntil(async () => (await raw.exists(lockKey(name))) === 0, 3_000);
  });

  it('an acquire resent after its reply was lost does not raise the hold count twice', async () => {
    const name = fresh();
    const lock = locks.getLock(name);
    proxy.dropReplies = true;
    const acquiring = lock.tryLock({ waitTime: 5_000 });
    await waitUntil(async () => (await raw.exists(lockKey(name))) === 1, 3_000);
    restoreReplies(); // the reply is lost; ioredis reconnects and sends the acquire again
    await expect(acquiring).resolves.toBe(true);
    expect(await lock.getHoldCount()).toBe(1);
    await lock.unlock();
    expect(await raw.exists(lockKey(name))).toBe(0);
  });

  it('a release resent after its reply was lost answers as the first one did, never "not held"', async () => {
    const name = fresh();
    const lock = locks.getLock(name);
    await lock.lock();
    proxy.dropReplies = true;
    const releasing = lock.unlock();
    await waitUntil(async () => (await raw.exists(lockKey(name))) === 0, 3_000);
    restoreReplies(); // ioredis resends the release, which finds the lock gone
    await expect(releasing).resolves.toBeUndefined();
  });

  async function scriptCalls(): Promise<number> {
    const stats = await raw.info('commandstats');
    return [...stats.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
  }
});
