import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockLostError, LockService, SemaphoreService } from '../../lib';
import { LOST_HAND_OVER_UNCONFIRMED, LOST_LEASE_TIME_RAN_OUT } from '../../lib/lock.messages';
import { createLockApp, waitersQueued } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

/** The grant lease of a hand-over (the waiter timeout): the confirmation goes out a third into it. */
const GRANT_LEASE_MS = 3_000;
const COMMAND_TIMEOUT_MS = 500;

type Kind = 'reentrant' | 'fair' | 'semaphore';

/**
 * A handed-over hold's confirmation is retried until its grant lease would end, as a renewal is
 * (docs/architecture.md#hand-off): a Redis stall shorter than the grant lease never loses the hold;
 * one past it loses it with a reason that says so, never "its leaseTime ran out". Before, the
 * confirmation was sent once: a stall longer than `commandTimeout` ended the hold (as "its leaseTime
 * ran out", even for a watchdog hold) while Redis kept it for the full lease.
 */
describe.each(['reentrant', 'fair', 'semaphore'] as const)('a handed-over %s hold whose confirmation meets a Redis stall', (kind: Kind) => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let other: TestingModule;
  let third: TestingModule;
  let seq = 0;
  const options = { fairLockWaiterTimeout: GRANT_LEASE_MS, commandTimeout: COMMAND_TIMEOUT_MS };

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, ...options });
    other = await createLockApp({ redis: redis.url, ...options });
    third = await createLockApp({ redis: redis.url, ...options });
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
    await third?.close();
    await redis?.stop();
  });

  /** The key whose TTL is the hold's lease in Redis. */
  const keyOf = (name: string) => (kind === 'semaphore' ? `lock:sem:{${name}}` : `lock:{${name}}`);

  /** Takes `name` in `moduleRef` and returns how to let it go. */
  async function take(moduleRef: TestingModule, name: string): Promise<() => Promise<void>> {
    if (kind === 'semaphore') {
      const permit = await moduleRef.get(SemaphoreService).getSemaphore(name, { permits: 1 }).acquire();
      return () => permit.release();
    }
    const lock = (kind === 'fair' ? moduleRef.get(FairLockService) : moduleRef.get(LockService)).getLock(name);
    await lock.lock();
    return () => lock.unlock();
  }

  /** Whether `moduleRef` could take `name` now (it is given back at once). */
  async function free(moduleRef: TestingModule, name: string): Promise<boolean> {
    if (kind === 'semaphore') {
      const permit = await moduleRef.get(SemaphoreService).getSemaphore(name, { permits: 1 }).tryAcquire();
      await permit?.release();
      return permit !== null;
    }
    const lock = (kind === 'fair' ? moduleRef.get(FairLockService) : moduleRef.get(LockService)).getLock(name);
    const taken = await lock.tryLock();
    if (taken) await lock.unlock();
    return taken;
  }

  /**
   * `name` is held in `app`, a run of `other` waits for it, and the release hands it over: `body`
   * runs with the handed-over hold's signal as soon as the run starts.
   */
  async function handOver<T>(name: string, leaseTime: number | undefined, body: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const release = await take(app, name);
    const fn = ({ signal }: { signal: AbortSignal }) => body(signal);
    const running =
      kind === 'semaphore'
        ? other.get(SemaphoreService).run(name, fn, { permits: 1, waitTime: 20_000, leaseTime })
        : (kind === 'fair' ? other.get(FairLockService) : other.get(LockService)).run(name, fn, { waitTime: 20_000, leaseTime });
    await waitersQueued(other, 1);
    await release();
    return running;
  }

  /** Freezes every client of Redis for `ms` (CLIENT PAUSE ALL): commands wait, none is answered. */
  const stall = (ms: number) => raw.client('PAUSE', ms, 'ALL');

  it.each([{ leaseTime: undefined }, { leaseTime: 20_000 }])(
    'a stall from the grant to well past the confirmation (shorter than the grant lease) keeps it (leaseTime $leaseTime)',
    async ({ leaseTime }) => {
      const name = `confirm-${kind}-${++seq}`;
      const outcome = await handOver(name, leaseTime, async (signal) => {
        // 0 to 1.9 s of the 3 s grant lease: the confirmation (at 1 s) gets no answer in its
        // commandTimeout (0.5 s); one resent after it is answered when Redis is back.
        await stall(1_900);
        const enteredAt = performance.now();
        await waitFor(async () => performance.now() - enteredAt > GRANT_LEASE_MS + 500 || signal.aborted, {
          what: 'the grant lease to pass',
          timeoutMs: 10_000,
        });
        return {
          aborted: signal.aborted,
          reason: String((signal.reason as Error | undefined)?.message),
          ttl: await raw.pttl(keyOf(name)), // made the full lease by the confirmation
          free: await free(third, name),
        };
      });
      expect(outcome.aborted ? outcome.reason : 'held').toBe('held');
      expect(outcome.ttl).toBeGreaterThan(GRANT_LEASE_MS);
      expect(outcome.free).toBe(false);
    },
    30_000,
  );

  it.each([{ leaseTime: undefined }, { leaseTime: 20_000 }])(
    'a stall past the grant lease loses it, saying its hand-over could not be confirmed (leaseTime $leaseTime)',
    async ({ leaseTime }) => {
      const name = `unconfirmed-${kind}-${++seq}`;
      const reason = await handOver(name, leaseTime, async (signal) => {
        await stall(GRANT_LEASE_MS + 1_000);
        await new Promise((resolve) => signal.addEventListener('abort', resolve));
        return signal.reason as unknown;
      }).catch((error: unknown) => error);
      await raw.ping(); // answered once the stall is over
      expect(reason).toBeInstanceOf(LockLostError);
      const message = (reason as Error).message;
      expect(message).toContain(LOST_HAND_OVER_UNCONFIRMED);
      expect(message).not.toContain(LOST_LEASE_TIME_RAN_OUT);
    },
    30_000,
  );
});
