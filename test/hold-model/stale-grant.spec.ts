import type { TestingModule } from '@nestjs/testing';
import Redis from 'ioredis';
import { FairLockService, LockService, ReadWriteLockService, type LockRunContext } from '../../lib';
import { stallEventLoop } from '../support/event-loop';
import { HoldWitness } from '../support/hold-witness';
import { createLockApp, releasesSettled, waitersQueued } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';

/**
 * A grant message is a hint tied to one join of one waiter (docs/hand-off-protocol.md): it never
 * starts a body on a grant that Redis no longer holds for it.
 *
 * The scene, for each kind with a line: a holder that crashed (its lease ends by itself); waiter W
 * (instance A, short fixed lease) and waiter X (instance B) in line behind it. When the lease ends,
 * W's attempt finds the lock free with itself first in line and grants itself inside that attempt
 * (or a racing attempt of X's grants it to W). Right after W's attempt is written, this process
 * stalls longer than W's lease: W handles "granted" after its lease ended and gives the grant back,
 * which hands the lock to X. Before the fix, W's retry then took the `grant:` message published
 * for the grant it had just given back, dated its lease from the wrong attempt, and ran its body
 * beside X's with a live signal.
 */
const W_LEASE_MS = 300;
const STALL_MS = 700;
const BODY_MS = 250;

type Kind = 'reentrant' | 'fair' | 'write';
const KINDS: Kind[] = ['reentrant', 'fair', 'write'];

function runIn(kind: Kind, moduleRef: TestingModule, name: string, fn: (context: LockRunContext) => Promise<void>, options: { waitTime: number; leaseTime?: number }) {
  if (kind === 'fair') return moduleRef.get(FairLockService).run(name, fn, options);
  if (kind === 'write') return moduleRef.get(ReadWriteLockService).runWrite(name, fn, options);
  return moduleRef.get(LockService).run(name, fn, options);
}

/** Asks Redis, from inside a body, whether the body's owner holds the lock there. */
function heldInRedis(kind: Kind, moduleRef: TestingModule, name: string): Promise<boolean> {
  if (kind === 'fair') return moduleRef.get(FairLockService).getLock(name).isHeldByCurrentOwner();
  if (kind === 'write') return moduleRef.get(ReadWriteLockService).getReadWriteLock(name).writeLock().isHeldByCurrentOwner();
  return moduleRef.get(LockService).getLock(name).isHeldByCurrentOwner();
}

async function holdAndCrash(kind: Kind, moduleRef: TestingModule, name: string, leaseTime: number): Promise<void> {
  const lock =
    kind === 'fair'
      ? moduleRef.get(FairLockService).getLock(name)
      : kind === 'write'
        ? moduleRef.get(ReadWriteLockService).getReadWriteLock(name).writeLock()
        : moduleRef.get(LockService).getLock(name);
  expect(await lock.tryLock({ waitTime: 0, leaseTime })).toBe(true);
  // Never released: it ends with its lease, as a crashed holder's does.
}

/** Is this command an attempt that joins a line (its arguments carry a line entry)? */
const isLineAttempt = (command: { name: string; args: unknown[] }): boolean =>
  command.name === 'evalsha' && command.args.some((arg) => typeof arg === 'string' && /^\S+ \S+ \d+ [pfrw]$/.test(arg));

/**
 * Stalls this process for `ms` right after `client` wrote its next line-joining attempt: ioredis
 * flushes its corked writes on the next tick, so the stall is queued behind that flush. The reply
 * arrives meanwhile and is handled late, as after a GC pause or a slow network.
 */
function stallAfterNextAttempt(client: Redis, ms: number): void {
  const target = client as unknown as { sendCommand(command: { name: string; args: unknown[] }, stream?: unknown): unknown };
  const original = target.sendCommand.bind(target);
  let armed = true;
  target.sendCommand = (command, stream) => {
    const result = original(command, stream);
    if (armed && isLineAttempt(command)) {
      armed = false;
      process.nextTick(() => stallEventLoop(ms));
    }
    return result;
  };
}

describe('A grant message never starts a body on a grant Redis no longer holds', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  describe.each(KINDS)('%s lock', (kind) => {
    let clientA: Redis;
    let apps: TestingModule[] = [];
    afterEach(async () => {
      for (const app of apps) await app.close();
      apps = [];
      clientA?.disconnect();
    });

    it('a waiter that gives back a late grant (its own, made inside its attempt) does not run on the message for it', async () => {
      clientA = new Redis(redis.url);
      const common = { fairLockWaiterTimeout: 2_000, commandTimeout: 3_000 };
      const appA = await createLockApp({ redis: clientA, ...common });
      const appB = await createLockApp({ redis: redis.url, ...common });
      apps = [appA, appB];
      const name = `stale-grant-${kind}`;
      const witness = new HoldWitness();
      const resource = `lock:${name}`;
      const bodies: string[] = [];
      /** Each body, as it starts with a live signal: does Redis hold the lock for it? */
      const grantedByRedis: Record<string, boolean> = {};
      const body = (who: string, app: () => TestingModule) => (context: LockRunContext) =>
        witness.inside(who, resource, context.signal, async () => {
          bodies.push(who);
          const live = !context.signal.aborted;
          const held = await heldInRedis(kind, app(), name);
          grantedByRedis[who] = held || !live;
          await new Promise((resolve) => setTimeout(resolve, BODY_MS));
        });

      await holdAndCrash(kind, appB, name, 600);
      const w = runIn(kind, appA, name, body('W', () => appA), { waitTime: 6_000, leaseTime: W_LEASE_MS });
      await waitersQueued(appA, 1);
      const x = runIn(kind, appB, name, body('X', () => appB), { waitTime: 6_000 });
      await waitersQueued(appB, 1);
      stallAfterNextAttempt(clientA, STALL_MS);

      const outcomes = await Promise.allSettled([w, x]);
      await releasesSettled(appA);
      await releasesSettled(appB);
      expect(witness.violations()).toEqual([]);
      expect(grantedByRedis).toEqual({ W: true, X: true });
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled']);
      // Both got in, one after the other.
      expect(bodies.sort()).toEqual(['W', 'X']);
    }, 30_000);
  });
});

/**
 * A grant message is trusted only as far as Redis ACLs protect the lock's channels; still, a client
 * that may publish there but cannot read the lock's keys cannot make a hold Redis did not grant: the
 * message must carry the waiter's join proof, which only its attempts (stored in the line's keys)
 * and the real grant message carry.
 */
describe('A forged grant message makes no hold', () => {
  let redis: TestRedis;
  let apps: TestingModule[] = [];
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    for (const app of apps) await app.close();
    apps = [];
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('a grant naming the waiter’s entry and attempt stamp, without its proof, is ignored', async () => {
    const holderApp = await createLockApp({ redis: redis.url });
    const waiterApp = await createLockApp({ redis: redis.url });
    apps = [holderApp, waiterApp];
    const raw = redis.client();
    const name = 'forged';
    const holder = holderApp.get(LockService).getLock(name);
    await holder.lock();
    const waiter = waiterApp.get(LockService).getLock(name);
    let settled = false;
    const acquired = waiter.tryLock({ waitTime: 10_000 }).finally(() => (settled = true));
    await waitersQueued(waiterApp, 1);

    // What a client that can see the line learns: the entry, and where the waiter listens.
    const [entry] = await raw.lrange(`lock:{${name}}:line`, 0, -1);
    const stamp = (await raw.hget(`lock:{${name}}:seen`, entry))?.split(' ')[1]?.split('.')[0];
    const clientId = entry.split(' ')[0].replace(/:\d+$/, '');
    const receivers = await raw.publish(`lock:{${name}}:channel:${clientId}`, `granted:${entry} 99 ${stamp}.0000000000000000 0 5000`);
    expect(receivers).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(settled).toBe(false);
    expect(await holder.isHeldByCurrentOwner()).toBe(true);

    await holder.unlock();
    expect(await acquired).toBe(true);
    expect(waiter.getFencingToken()).not.toBe(99);
    await waiter.unlock();
    raw.disconnect();
  }, 30_000);
});
