import { Test, type TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { Lock, LockLostError, LockModuleOptions, LockNotHeldError, LockRunContext, LockTimeoutError, RunOptions, WaitingRunOptions } from '../../lib';
import { LockEngine } from '../../lib/engine/lock-engine';
import { LockTestingModule } from '../../lib/testing';
import { SimulatedNetwork } from '../../lib/testing/simulated-network';
import { StandInConnection } from '../../lib/testing/stand-in-connection';
import { createLockApp, deferred, releasesSettled, sleep, waitersQueued, waitUntil } from './lock-app';
import { startRedis } from './redis-server';

/**
 * What a contract suite runs on: a real Redis (test/support) or the testing kit's in-memory one.
 * Both are reached the same way: module instances that behave as separate processes, and a raw
 * view of the keys to check (or break) the state behind the library's back.
 */
export interface ContractEngine {
  readonly name: string;
  start(): Promise<EngineHandle>;
}

export interface EngineHandle {
  /** The address module options name (`redis`, `redlock.clients`). */
  readonly url: string;
  /** A module instance on this engine: another process, as far as the locks can tell. */
  createApp(options: LockModuleOptions): Promise<TestingModule>;
  exists(key: string): Promise<number>;
  del(key: string): Promise<number>;
  /** A raw client of the engine's server (for the kit: a stand-in connection with the same methods). */
  client(): Redis;
  stop(): Promise<void>;
}

/** The engines a suite can run on, for `describe.each` (title: `$name`). */
export const ENGINES = (): ContractEngine[] => [redisEngine, kitEngine];

/** A redis-server of the suite's own, and LockModule. */
export const redisEngine: ContractEngine = {
  name: 'redis',
  async start() {
    const redis = await startRedis();
    const raw = redis.client();
    return {
      url: redis.url,
      createApp: (options) => createLockApp(options),
      exists: (key) => raw.exists(key),
      del: (key) => raw.del(key),
      client: () => redis.client(),
      stop: () => redis.stop(),
    };
  },
};

/** The testing kit: LockTestingModule instances sharing one simulated network (one in-memory Redis per address). */
export const kitEngine: ContractEngine = {
  name: 'testing kit',
  async start() {
    const network = new SimulatedNetwork();
    const url = 'redis://kit.test:6379';
    const keyspace = () => network.serverFor(url).keyspace;
    return {
      url,
      async createApp(options) {
        const moduleRef = await Test.createTestingModule({ imports: [LockTestingModule.forRoot(options)] })
          .overrideProvider(SimulatedNetwork)
          .useValue(network)
          .compile();
        moduleRef.useLogger(false);
        await moduleRef.init();
        return moduleRef;
      },
      exists: async (key) => keyspace().execute('exists', [key], Date.now()) as number,
      del: async (key) => keyspace().execute('del', [key], Date.now()) as number,
      client: () => new StandInConnection(network.serverFor(url)) as unknown as Redis,
      stop: async () => undefined,
    };
  },
};

/** Until a caller of `moduleRef` sleeps between RedLock retries (it tried, found the lock busy, and waits). */
function redLockRetrying(moduleRef: TestingModule): Promise<void> {
  const masters = moduleRef.get(LockEngine).redlockMasters!;
  return waitUntil(() => masters.waiterCount > 0);
}



/** The lock names a contract suite uses: each made from a unique plain base. */
export interface ContractNames {
  /** Added to the suite's title (empty for plain names). */
  readonly label: string;
  make(base: string): string;
}

const plainNames: ContractNames = { label: '', make: (base) => base };

/**
 * Names full of braces, colons, escapes and bookkeeping suffixes: each suite must behave exactly as
 * with plain names (one name, one lock; docs/architecture.md#keys).
 */
export const braceNames: ContractNames = {
  label: ', names with braces',
  make: (base) => `{t}:%7D}{${base}}:line{`,
};

/** How the contract reaches one lock kind. */
export interface LockKind {
  readonly kind: string;
  make(app: TestingModule, name: string): Lock;
  run<T>(app: TestingModule, name: string, fn: (context: LockRunContext) => Promise<T>, options?: WaitingRunOptions): Promise<T>;
  /** The Redis key holding the lock's state. */
  redisKey(name: string): string;
  /** Module options the kind needs besides `redis` (e.g. RedLock's masters), given the suite's server URL. */
  moduleOptions?(redisUrl: string): Partial<LockModuleOptions>;
  /** A kind that waits by retrying (RedLock) has no subscriber seat to observe while it waits. */
  waitsByRetrying?: boolean;
  /** The name `run` reports for `name` (its context's `name`, a `LockTimeoutError`'s `lockName`), when not `name`. */
  reportedName?(name: string): string | readonly string[];
  /** Redis keeps no token with a hold (layout 'redisson'): `forceUnlock({ fencingToken })` is refused. */
  readonly noStoredTokens?: boolean;
}

export const WATCHDOG_MS = 600;

/**
 * The behaviour every exclusive lock kind shares (ShedLock's idea: one suite, every kind). Runs
 * against a real Redis with a short watchdog so renewal and expiry take a few hundred ms.
 */
export function describeLockContract(kind: LockKind, engine: ContractEngine = redisEngine, names: ContractNames = plainNames): void {
  describe(`${kind.kind}: lock contract (${engine.name}${names.label})`, () => {
    let redis: EngineHandle;
    let app: TestingModule;
    let other: TestingModule; // a second module instance: another process, as far as Redis can tell
    let raw: Pick<EngineHandle, 'exists' | 'del'>;
    let seq = 0;
    const fresh = () => names.make(`${kind.kind}-${++seq}`);
    /** Until a caller of `moduleRef` is waiting for a lock. */
    const waiting = (moduleRef: TestingModule) => (kind.waitsByRetrying ? redLockRetrying(moduleRef) : waitersQueued(moduleRef));

    beforeAll(async () => {
      redis = await engine.start();
      raw = redis;
      const options = { redis: redis.url, watchdogTimeout: WATCHDOG_MS, ...kind.moduleOptions?.(redis.url) };
      app = await redis.createApp(options);
      other = await redis.createApp(options);
    });
    afterAll(async () => {
      await app?.close();
      await other?.close();
      await redis?.stop();
    });

    it('re-enters: the hold count rises and falls, and the key goes only at the last unlock', async () => {
      const name = fresh();
      const lock = kind.make(app, name);
      await lock.lock();
      await lock.lock();
      expect(await lock.getHoldCount()).toBe(2);
      expect(await lock.isHeldByCurrentOwner()).toBe(true);
      await lock.unlock();
      expect(await lock.getHoldCount()).toBe(1);
      expect(await lock.isLocked()).toBe(true);
      await lock.unlock();
      expect(await lock.getHoldCount()).toBe(0);
      expect(await lock.isLocked()).toBe(false);
      expect(await raw.exists(kind.redisKey(name))).toBe(0);
      expect(await lock.remainTimeToLive()).toBe(-2);
    });

    it('two lock objects exclude each other, in one module and across modules', async () => {
      const name = fresh();
      const first = kind.make(app, name);
      await first.lock();
      expect(await kind.make(app, name).tryLock()).toBe(false);
      expect(await kind.make(other, name).tryLock({ waitTime: 50 })).toBe(false);
      await first.unlock();
      const second = kind.make(other, name);
      expect(await second.tryLock()).toBe(true);
      await second.unlock();
    });

    it('unlock by a non-owner rejects with LockNotHeldError and the lock stays', async () => {
      const name = fresh();
      const holder = kind.make(app, name);
      await holder.lock();
      await expect(kind.make(other, name).unlock()).rejects.toBeInstanceOf(LockNotHeldError);
      await expect(kind.make(app, name).unlock()).rejects.toBeInstanceOf(LockNotHeldError);
      expect(await holder.isHeldByCurrentOwner()).toBe(true);
      expect(await holder.isLocked()).toBe(true);
      await holder.unlock();
    });

    it('a leaseTime lock expires by itself and is not renewed', async () => {
      const name = fresh();
      const lock = kind.make(app, name);
      await lock.lock({ leaseTime: 300 });
      const ttl = await lock.remainTimeToLive();
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(300);
      await waitUntil(async () => !(await lock.isLocked()), 5_000);
      // A multi-lock's members were taken one after another, so they expire a little apart too
      // (its isLocked() turns false with the first): another owner takes it once the last expired.
      await waitUntil(() => kind.make(other, name).tryLock(), 5_000);
    });

    it('without leaseTime the watchdog keeps the lock well past watchdogTimeout', async () => {
      const name = fresh();
      const lock = kind.make(app, name);
      await lock.lock();
      const until = Date.now() + WATCHDOG_MS * 4;
      while (Date.now() < until) {
        expect(await lock.isLocked()).toBe(true);
        await sleep(WATCHDOG_MS / 4);
      }
      expect(await kind.make(other, name).tryLock()).toBe(false);
      await lock.unlock();
      expect(await lock.isLocked()).toBe(false);
    });

    it('hands off by pub/sub: a waiter gets the lock right after unlock, not at lease expiry', async () => {
      const name = fresh();
      const holder = kind.make(app, name);
      await holder.lock({ leaseTime: 10_000 });
      const waiter = kind.make(other, name);
      const acquired = waiter.tryLock({ waitTime: 8_000 });
      await waiting(other);
      const releasedAt = Date.now();
      await holder.unlock();
      expect(await acquired).toBe(true);
      // Far below the 10 s lease; generous for a loaded CI machine.
      expect(Date.now() - releasedAt).toBeLessThan(1_000);
      await waiter.unlock();
    });

    it('tryLock with waitTime 0 or a short waitTime on a busy lock resolves false', async () => {
      const name = fresh();
      const holder = kind.make(app, name);
      await holder.lock();
      expect(await kind.make(other, name).tryLock({ waitTime: 0 })).toBe(false);
      const started = Date.now();
      expect(await kind.make(other, name).tryLock({ waitTime: 150 })).toBe(false);
      expect(Date.now() - started).toBeGreaterThanOrEqual(140);
      await holder.unlock();
    });

    it('run throws LockTimeoutError on a busy lock and never calls fn', async () => {
      const name = fresh();
      const holder = kind.make(app, name);
      await holder.lock();
      const fn = jest.fn(async () => 'ran');
      const error = await kind.run(other, name, fn, { waitTime: 100 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockTimeoutError);
      expect((error as LockTimeoutError).lockName).toEqual(kind.reportedName?.(name) ?? name);
      expect(fn).not.toHaveBeenCalled();
      await holder.unlock();
    });

    it('run returns fn result, and releases and rethrows the same error when fn throws', async () => {
      const name = fresh();
      expect(await kind.run(app, name, async ({ name: given }) => `ok:${String(given)}`)).toBe(`ok:${String(kind.reportedName?.(name) ?? name)}`);
      const thrown = new Error('boom');
      await expect(
        kind.run(app, name, async () => {
          expect(await kind.make(other, name).tryLock()).toBe(false); // held during fn
          throw thrown;
        }),
      ).rejects.toBe(thrown);
      await releasesSettled(app);
      expect(await raw.exists(kind.redisKey(name))).toBe(0);
      expect(await kind.make(other, name).tryLock()).toBe(true);
    });

    it('nested run on the same name re-enters instead of deadlocking', async () => {
      const name = fresh();
      const result = await kind.run(app, name, () =>
        kind.run(app, name, async () => kind.make(app, name).getHoldCount(), { waitTime: 200 }),
      );
      expect(result).toBe(2);
      await releasesSettled(app);
      expect(await raw.exists(kind.redisKey(name))).toBe(0);
    });

    it('concurrent branches of one call chain asking for another lock exclude each other', async () => {
      const outer = fresh();
      const inner = fresh();
      let inside = 0;
      let maxInside = 0;
      await kind.run(app, outer, () =>
        Promise.all(
          [1, 2, 3].map(() =>
            kind.run(
              app,
              inner,
              async () => {
                maxInside = Math.max(maxInside, ++inside);
                await sleep(30);
                inside--;
              },
              { waitTime: 5_000 },
            ),
          ),
        ),
      );
      expect(maxInside).toBe(1);
    });

    it('detects a lock deleted behind its holder: signal aborts with LockLostError', async () => {
      const name = fresh();
      const gate = deferred();
      let seen: AbortSignal | undefined;
      const running = kind.run(app, name, async ({ signal }) => {
        seen = signal;
        await gate.promise;
        return 'finished anyway';
      });
      await waitUntil(() => seen !== undefined);
      expect(seen!.aborted).toBe(false);
      await raw.del(kind.redisKey(name));
      await waitUntil(() => seen!.aborted, WATCHDOG_MS * 5);
      expect(seen!.reason).toBeInstanceOf(LockLostError);
      gate.resolve();
      // fn completed anyway: its outcome is run's outcome, and the empty release does not throw.
      await expect(running).resolves.toBe('finished anyway');
    });

    it('forceUnlock frees a lock held by someone else and wakes its waiter', async () => {
      const name = fresh();
      const holder = kind.make(app, name);
      await holder.lock();
      const acquired = kind.make(other, name).tryLock({ waitTime: 5_000 });
      await waiting(other);
      expect(await kind.make(other, name).forceUnlock()).toBe(true);
      expect(await acquired).toBe(true);
      expect(await kind.make(other, name).forceUnlock()).toBe(true);
      expect(await kind.make(other, name).forceUnlock()).toBe(false);
    });

    it('forceUnlock({ fencingToken }) releases only the hold with that token, and hands the lock to its waiter', async () => {
      const name = fresh();
      const holder = kind.make(app, name);
      await holder.lock();
      const operator = kind.make(other, name);
      if (kind.noStoredTokens) {
        await expect(operator.forceUnlock({ fencingToken: 1 })).rejects.toThrow(TypeError);
        expect(await operator.forceUnlock()).toBe(true);
        return;
      }
      if (kind.kind === 'multi') {
        // One token per member: a single one is refused, and nothing is released.
        await expect(operator.forceUnlock({ fencingToken: 1 })).rejects.toThrow(TypeError);
        expect(await operator.forceUnlock()).toBe(true);
        return;
      }
      const token = holder.getFencingToken()!;
      expect(token).toEqual(expect.any(Number));
      await expect(operator.forceUnlock({ fencingToken: 0 })).rejects.toThrow(TypeError);
      await expect(operator.forceUnlock({ fencingToken: 1.5 })).rejects.toThrow(TypeError);
      // A token the operator did not see on this hold releases nothing.
      expect(await operator.forceUnlock({ fencingToken: token - 1 })).toBe(false);
      expect(await operator.forceUnlock({ fencingToken: token + 1 })).toBe(false);
      expect(await holder.isHeldByCurrentOwner()).toBe(true);

      const waiter = kind.make(other, name);
      const acquired = waiter.tryLock({ waitTime: 5_000 });
      await waiting(other);
      expect(await operator.forceUnlock({ fencingToken: token })).toBe(true);
      expect(await acquired).toBe(true);
      // The waiter holds it now, with a new token: the old one releases nothing any more.
      const next = waiter.getFencingToken()!;
      expect(next).toBeGreaterThan(token);
      expect(await operator.forceUnlock({ fencingToken: token })).toBe(false);
      expect(await waiter.isHeldByCurrentOwner()).toBe(true);
      expect(await operator.forceUnlock({ fencingToken: next })).toBe(true);
      expect(await operator.forceUnlock({ fencingToken: next })).toBe(false);
      expect(await raw.exists(kind.redisKey(name))).toBe(0);
    });
  });
}

/** How the run contract reaches one kind through its `run` helper (locks, multi-locks, semaphores). */
export interface RunKind {
  readonly kind: string;
  run<T>(app: TestingModule, name: string, fn: (context: LockRunContext) => Promise<T>, options?: WaitingRunOptions): Promise<T>;
  /** The keys holding the state of `name`: deleting them loses the lock. */
  stateKeys(name: string): string[];
  /** The fencing tokens a run's context carries (one per member of a multi-lock). */
  tokens(context: LockRunContext): number[];
  /** A nested run of the same name re-enters (a semaphore's permits do not). */
  readonly reentrant: boolean;
  moduleOptions?(redisUrl: string): Partial<LockModuleOptions>;
  readonly waitsByRetrying?: boolean;
  /** The kind hands out no fencing tokens (a fair lock in layout 'redisson': Redisson writes none). */
  readonly noFencingTokens?: boolean;
}

/**
 * The behaviour every exclusive kind shares when used through `run` (the shape apps use most):
 * exclusion across processes, re-entry, waitTime and leaseTime expiry, `signal` on loss,
 * cancellation, and fencing tokens that only grow. A semaphore of one permit and a multi-lock pass
 * it too.
 */
export function describeRunContract(kind: RunKind, engine: ContractEngine = redisEngine, names: ContractNames = plainNames): void {
  describe(`${kind.kind}: run contract (${engine.name}${names.label})`, () => {
    let handle: EngineHandle;
    let app: TestingModule;
    let other: TestingModule;
    let seq = 0;
    const fresh = () => names.make(`run-${kind.kind}-${++seq}`);
    const waiting = (moduleRef: TestingModule) => (kind.waitsByRetrying ? redLockRetrying(moduleRef) : waitersQueued(moduleRef));
    /** Holds `name` in `moduleRef` until the returned gate opens; resolves once held. */
    const holdUntil = async (moduleRef: TestingModule, name: string, options?: WaitingRunOptions) => {
      const gate = deferred();
      const held = deferred<LockRunContext>();
      const running = kind.run(
        moduleRef,
        name,
        async (context) => {
          held.resolve(context);
          await gate.promise;
          return 'held';
        },
        options,
      );
      const context = await Promise.race([held.promise, running.then(() => Promise.reject(new Error('run ended before fn ran')))]);
      return { context, open: () => gate.resolve(), running };
    };

    beforeAll(async () => {
      handle = await engine.start();
      const options = { redis: handle.url, watchdogTimeout: WATCHDOG_MS, ...kind.moduleOptions?.(handle.url) };
      app = await handle.createApp(options);
      other = await handle.createApp(options);
    });
    afterAll(async () => {
      await app?.close();
      await other?.close();
      await handle?.stop();
    });

    it('excludes: concurrent runs in two processes never overlap, and all of them run', async () => {
      const name = fresh();
      let inside = 0;
      let maxInside = 0;
      let done = 0;
      const body = async () => {
        maxInside = Math.max(maxInside, ++inside);
        await sleep(15);
        inside--;
        done++;
      };
      await Promise.all([app, other, app, other, app, other].map((moduleRef) => kind.run(moduleRef, name, body, { waitTime: 20_000 })));
      expect(done).toBe(6);
      expect(maxInside).toBe(1);
    });

    it('re-enters in a nested run of the same name (where the kind re-enters)', async () => {
      if (!kind.reentrant) return;
      const name = fresh();
      const result = await kind.run(app, name, () => kind.run(app, name, async () => 'inner', { waitTime: 200 }));
      expect(result).toBe('inner');
    });

    it('waitTime: a run on a busy lock throws LockTimeoutError after about waitTime, without calling fn', async () => {
      const name = fresh();
      const holder = await holdUntil(app, name);
      const fn = jest.fn(async () => 'ran');
      const started = Date.now();
      const error = await kind.run(other, name, fn, { waitTime: 120 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockTimeoutError);
      expect(Date.now() - started).toBeGreaterThanOrEqual(110);
      expect(fn).not.toHaveBeenCalled();
      holder.open();
      await holder.running;
    });

    it('leaseTime: the hold ends by itself, another process gets it, and the late release does not throw', async () => {
      const name = fresh();
      const holder = await holdUntil(app, name, { leaseTime: 300 });
      const got = await kind.run(other, name, async () => 'after the lease', { waitTime: 10_000 });
      expect(got).toBe('after the lease');
      holder.open();
      await expect(holder.running).resolves.toBe('held');
    });

    it('signal aborts with LockLostError when the lock vanishes, and run still returns fn result', async () => {
      const name = fresh();
      const holder = await holdUntil(app, name);
      expect(holder.context.signal.aborted).toBe(false);
      for (const key of kind.stateKeys(name)) await handle.del(key);
      await waitUntil(() => holder.context.signal.aborted, WATCHDOG_MS * 5);
      expect(holder.context.signal.reason).toBeInstanceOf(LockLostError);
      holder.open();
      await expect(holder.running).resolves.toBe('held');
    });

    it('cancellation: aborting a waiting run rejects with the reason at once and leaves no waiter', async () => {
      const name = fresh();
      const holder = await holdUntil(app, name);
      const controller = new AbortController();
      const fn = jest.fn(async () => 'ran');
      const waited = kind.run(other, name, fn, { waitTime: 20_000, signal: controller.signal }).catch((e: unknown) => e);
      await waiting(other);
      const reason = new Error('caller gave up');
      controller.abort(reason);
      expect(await waited).toBe(reason);
      expect(fn).not.toHaveBeenCalled();
      await waitUntil(() => other.get(LockEngine).subscriber.waiterCount() === 0);
      holder.open();
      await holder.running;
      // Nothing of the cancelled wait is left in the way.
      expect(await kind.run(app, name, async () => 'free', { waitTime: 0 })).toBe('free');
    });

    it('fencing tokens grow with every acquisition, in either process', async () => {
      const name = fresh();
      const seen: number[][] = [];
      for (const moduleRef of [app, other, app, other]) {
        seen.push(await kind.run(moduleRef, name, async (context) => kind.tokens(context)));
      }
      if (kind.noFencingTokens) {
        expect(seen).toEqual(seen.map(() => []));
        return;
      }
      for (const tokens of seen) {
        expect(tokens.length).toBeGreaterThan(0);
        for (const token of tokens) expect(Number.isSafeInteger(token)).toBe(true);
      }
      for (let i = 1; i < seen.length; i++) {
        seen[i].forEach((token, member) => expect(token).toBeGreaterThan(seen[i - 1][member]));
      }
    });
  });
}
