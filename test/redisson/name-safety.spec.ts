import type { TestingModule } from '@nestjs/testing';
import {
  FairLockService,
  InvalidLockNameError,
  LockLostError,
  LockNameConflictError,
  type LockModuleOptions,
  LockService,
  LockUnavailableError,
  ReadWriteLockService,
  SemaphoreService,
} from '../../lib';
import { RedissonNames } from '../../lib/layouts/redisson-names';
import { LockEngine } from '../../lib/engine/lock-engine';
import { APP_KEYS, derivedKeyNames, type RawClient, snapshot, TYPE_WORDS } from '../support/app-keys';
import { createLockApp, releasesSettled } from '../support/lock-app';
import { describeOnCluster, startRedisCluster } from '../support/redis-cluster';
import { startRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

/**
 * Issue 42 (DESIGN §25): in layout 'redisson' a lock name is a bare Redis key, and it reaches its own
 * lock and nothing else, on a real Redis, standalone and a 3-master Cluster:
 * - a name shaped like a derived key of any kind (another lock's fencing counter, a fair queue, a
 *   semaphore's leases, this library's records...) is refused with InvalidLockNameError (400) in
 *   every kind, after the nameMapper, before anything is sent;
 * - a key that holds something else (an application's value of any type) is a LockNameConflictError
 *   (409), never a LockUnavailableError (503) nor a wait, and the application's value is unchanged;
 * - a semaphore takes a string only as a permit counter this layout created or may take over.
 */

interface Target {
  readonly raw: RawClient;
  options(): Pick<LockModuleOptions, 'redis'>;
  stop(): Promise<void>;
}

/** The body a locked call would run: it must never run here. */
const mustNotRun = (): never => {
  throw new Error('the body ran');
};

function describeNameSafety(label: string, start: () => Promise<Target>): void {
  describe(`layout 'redisson', ${label}: a name reaches its own lock and nothing else`, () => {
    let target: Target;
    let app: TestingModule;
    let fenced: TestingModule;
    let seq = 0;
    const fresh = (what: string) => `order:${what}:${++seq}`;

    beforeAll(async () => {
      target = await start();
      app = await createLockApp({ ...target.options(), layout: 'redisson', watchdogTimeout: 3_000 });
      fenced = await createLockApp({ ...target.options(), layout: 'redisson', watchdogTimeout: 3_000, redisson: { fencedLocks: true } });
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      await fenced?.close();
      await target?.stop();
    });

    describe('names shaped like a derived key are refused (InvalidLockNameError, 400) in every kind, before anything is sent', () => {
      const victim = 'order:42';
      const kinds: Array<[string, (module: TestingModule, name: string) => Promise<unknown>]> = [
        ['run', (m, name) => m.get(LockService).run(name, mustNotRun)],
        ['getLock', async (m, name) => m.get(LockService).getLock(name).tryLock()],
        ['fair', (m, name) => m.get(FairLockService).run(name, mustNotRun)],
        ['read', (m, name) => m.get(ReadWriteLockService).runRead(name, mustNotRun)],
        ['write', (m, name) => m.get(ReadWriteLockService).runWrite(name, mustNotRun)],
        ['semaphore', (m, name) => m.get(SemaphoreService).run(name, mustNotRun, { permits: 5 })],
        ['multi', (m, name) => m.get(LockService).run([`free:${name.length}`, name], mustNotRun)],
        ['inspect', (m, name) => m.get(LockService).inspect(name)],
      ];

      it.each(kinds)('%s', async (_kind, call) => {
        const before = await target.raw.dbsize?.();
        for (const name of derivedKeyNames(victim)) {
          const error = await call(app, name).then(
            () => new Error(`accepted ${name}`),
            (e: unknown) => e,
          );
          expect(error).toBeInstanceOf(InvalidLockNameError);
          expect(error).toMatchObject({ statusCode: 400, extensions: { code: 'BAD_REQUEST', statusCode: 400 } });
          expect((error as Error).message).toContain("refused in layout 'redisson'");
        }
        if (before !== undefined) expect(await target.raw.dbsize?.()).toBe(before);
      });

      it("a semaphore named after another lock's fencing counter is refused, so no fencing token ever goes back", async () => {
        const name = fresh('fenced');
        const tokens: number[] = [];
        for (let i = 0; i < 3; i++) tokens.push(await fenced.get(LockService).run(name, (context) => context.fencingToken as number));
        await expect(fenced.get(SemaphoreService).run(RedissonNames.fenceToken(name), mustNotRun, { permits: 5, take: 2 })).rejects.toBeInstanceOf(
          InvalidLockNameError,
        );
        tokens.push(await fenced.get(LockService).run(name, (context) => context.fencingToken as number));
        expect(tokens).toEqual([...tokens].sort((a, b) => a - b));
        expect(new Set(tokens).size).toBe(4);
        expect(await target.raw.get(RedissonNames.fenceToken(name))).toBe(String(tokens[3]));
      });

      it('the check applies to the mapped name: a nameMapper that maps into a derived shape is refused, one that maps away from it is not', async () => {
        const into = await createLockApp({ ...target.options(), layout: 'redisson', redisson: { nameMapper: (n: string) => `redisson_sc:{${n}}` } });
        const away = await createLockApp({ ...target.options(), layout: 'redisson', redisson: { nameMapper: (n: string) => `app:${n}` } });
        try {
          await expect(into.get(LockService).run('order:7', mustNotRun)).rejects.toBeInstanceOf(InvalidLockNameError);
          // 'app:redisson_lock_token:{x}' is nobody's derived key: a lock of its own.
          const name = `redisson_lock_token:{${fresh('mapped')}}`;
          expect(await away.get(LockService).run(name, async () => target.raw.exists(`app:${name}`))).toBe(1);
        } finally {
          await into.close();
          await away.close();
        }
      });
    });

    describe('a key that holds something else is a LockNameConflictError (409), and the application value is unchanged', () => {
      type Kind = readonly [string, string, (name: string) => Promise<unknown>];
      const kinds = (): Kind[] => [
        ['plain', 'a lock', (name) => app.get(LockService).run(name, mustNotRun, { waitTime: 300 })],
        ['fenced', 'a lock', (name) => fenced.get(LockService).run(name, mustNotRun, { waitTime: 300 })],
        ['fair', 'a lock', (name) => app.get(FairLockService).run(name, mustNotRun, { waitTime: 300 })],
        ['read', 'a read-write lock', (name) => app.get(ReadWriteLockService).runRead(name, mustNotRun, { waitTime: 300 })],
        ['write', 'a read-write lock', (name) => app.get(ReadWriteLockService).runWrite(name, mustNotRun, { waitTime: 300 })],
        ['semaphore', "a semaphore's permit counter", (name) => app.get(SemaphoreService).run(name, mustNotRun, { permits: 10, take: 2, waitTime: 300 })],
        ['multi', 'a lock', (name) => app.get(LockService).run([`${name}:free`, name], mustNotRun, { waitTime: 300 })],
      ];
      const cases = APP_KEYS.flatMap((key) => ['plain', 'fenced', 'fair', 'read', 'write', 'semaphore', 'multi'].map((kind) => [kind, key.label] as const));

      it.each(cases)('%s on an application %s', async (kindName, keyLabel) => {
        const appKey = APP_KEYS.find((key) => key.label === keyLabel)!;
        const [, expected, call] = kinds().find(([kind]) => kind === kindName)!;
        const name = fresh(`app-${kindName}`);
        await appKey.write(target.raw, name);
        const before = await snapshot(target.raw, name);
        const error = await call(name).then(
          () => new Error('acquired'),
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(LockNameConflictError);
        expect(error).not.toBeInstanceOf(LockUnavailableError);
        expect(error).toMatchObject({ statusCode: 409, lockName: kindName === 'multi' ? expect.anything() : name, extensions: { code: 'CONFLICT', statusCode: 409 } });
        expect((error as Error).message).toContain(`The key ${JSON.stringify(name)} holds ${TYPE_WORDS[appKey.type]}, not ${expected}`);
        await releasesSettled(app);
        expect(await snapshot(target.raw, name)).toEqual(before);
        if (kindName === 'multi') expect(await target.raw.exists(`${name}:free`)).toBe(0);
        if (kindName === 'fenced') expect(await target.raw.exists(RedissonNames.fenceToken(name))).toBe(0);
      });

      it("a held lock whose key another client overwrites is lost at the next renewal (its signal aborts), and health does not count Redis as failing", async () => {
        const name = fresh('overwritten');
        const engine = app.get(LockEngine);
        const aborted = await app.get(LockService).run(name, async ({ signal }) => {
          await target.raw.set(name, 'overwritten by the application');
          await waitFor(() => signal.aborted, { what: 'the hold to be lost', timeoutMs: 2_500 });
          return signal.reason as Error;
        });
        expect(aborted).toBeInstanceOf(LockLostError);
        expect(engine.watchdog.failingSince).toBeUndefined();
        await releasesSettled(app);
        expect(await target.raw.get(name)).toBe('overwritten by the application');
      });

      it('forceUnlock of a plain, fair, read or write lock never deletes an application key', async () => {
        const forced: Array<[string, (name: string) => Promise<boolean>]> = [
          ['plain', (name) => app.get(LockService).getLock(name).forceUnlock()],
          ['fair', (name) => app.get(FairLockService).getLock(name).forceUnlock()],
          ['read', (name) => app.get(ReadWriteLockService).getReadWriteLock(name).readLock().forceUnlock()],
          ['write', (name) => app.get(ReadWriteLockService).getReadWriteLock(name).writeLock().forceUnlock()],
        ];
        for (const [kind, force] of forced) {
          for (const appKey of APP_KEYS) {
            const name = fresh(`force-${kind}`);
            await appKey.write(target.raw, name);
            // A hash that looks like a read-write lock to Redisson's own force unlock (mode read or write).
            if (appKey.label === 'hash with mode' && kind === 'write') await target.raw.hset(name, 'mode', 'write');
            const before = await snapshot(target.raw, name);
            await expect(force(name)).rejects.toBeInstanceOf(LockNameConflictError);
            expect(await snapshot(target.raw, name)).toEqual(before);
          }
        }
      });

      it("a fenced lock whose token key is not a counter, and a fair lock whose queue or deadlines are not Redisson's, refuse without writing", async () => {
        const token = fresh('token');
        await target.raw.hset(RedissonNames.fenceToken(token), 'a', '1');
        await expect(fenced.get(LockService).run(token, mustNotRun)).rejects.toThrow(/holds a hash, not a fencing token counter/);
        expect(await target.raw.exists(token)).toBe(0);
        const text = fresh('token-text');
        await target.raw.set(RedissonNames.fenceToken(text), 'not a number');
        await expect(fenced.get(LockService).run(text, mustNotRun)).rejects.toThrow(/holds a string, not a fencing token counter/);
        expect(await target.raw.exists(text)).toBe(0);

        const queue = fresh('queue');
        await target.raw.set(RedissonNames.fairQueue(queue), 'x');
        await expect(app.get(FairLockService).run(queue, mustNotRun)).rejects.toThrow(/holds a string, not a fair lock's queue/);
        expect(await target.raw.exists(queue)).toBe(0);
        const deadlines = fresh('deadlines');
        await target.raw.rpush(RedissonNames.fairTimeouts(deadlines), 'x');
        await expect(app.get(FairLockService).run(deadlines, mustNotRun)).rejects.toThrow(/holds a list, not a fair lock's deadlines/);
        expect(await target.raw.exists(deadlines)).toBe(0);

        const leases = fresh('leases');
        await target.raw.set(RedissonNames.semaphoreTimeouts(leases), 'x');
        await expect(app.get(SemaphoreService).run(leases, mustNotRun, { permits: 2 })).rejects.toThrow(/holds a string, not a semaphore's permit leases/);
        expect(await target.raw.exists(leases)).toBe(0);
      });
    });

    describe('a semaphore takes a string only as a permit counter this layout created or may take over', () => {
      const semaphores = () => app.get(SemaphoreService);

      it("a counter Java's trySetPermits left (exactly the limit, nothing leased) is taken over and marked", async () => {
        const name = fresh('java-counter');
        await target.raw.set(name, '3');
        expect(await semaphores().run(name, async () => target.raw.get(name), { permits: 3 })).toBe('2');
        expect(await target.raw.get(RedissonNames.permitMarker(name))).toBe('1');
        await releasesSettled(app);
        expect(await target.raw.get(name)).toBe('3');
        // Marked: a Java RSemaphore holder took one (2 left, nothing leased): still this semaphore's counter.
        await target.raw.decrby(name, 1);
        expect(await semaphores().run(name, async () => target.raw.get(name), { permits: 3 })).toBe('1');
      });

      it('a counter with permits leased (a Java PES in use) is taken over too', async () => {
        const name = fresh('java-pes');
        await target.raw.set(name, '1');
        await target.raw.zadd(RedissonNames.semaphoreTimeouts(name), Date.now() + 60_000, Buffer.alloc(16, 7));
        expect(await semaphores().run(name, async () => target.raw.get(name), { permits: 2 })).toBe('0');
        expect(await target.raw.exists(RedissonNames.permitMarker(name))).toBe(1);
      });

      it("a number neither created here nor at the caller's limit is an application's: refused, unchanged, unmarked", async () => {
        const name = fresh('number');
        await target.raw.set(name, '3');
        await expect(semaphores().run(name, mustNotRun, { permits: 5 })).rejects.toThrow(/holds a string, not a semaphore's permit counter/);
        expect(await target.raw.get(name)).toBe('3');
        expect(await target.raw.exists(RedissonNames.permitMarker(name))).toBe(0);
      });

      it('a counter this layout created is recognised when idle, whatever Java did to it since', async () => {
        const name = fresh('ours');
        await semaphores().run(name, async () => undefined, { permits: 4 });
        await releasesSettled(app);
        expect(await target.raw.get(name)).toBe('4');
        expect(await target.raw.exists(RedissonNames.semaphoreTimeouts(name))).toBe(0);
        await target.raw.decrby(name, 2); // Java RSemaphore holders
        expect(await semaphores().run(name, async () => target.raw.get(name), { permits: 4 })).toBe('1');
      });
    });
  });
}

describeNameSafety('standalone', async () => {
  const redis = await startRedis();
  const raw = redis.client();
  return { raw, options: () => ({ redis: redis.url }), stop: () => redis.stop() };
});

describeOnCluster('Redis Cluster (3 masters)', () => {
  describeNameSafety('cluster', async () => {
    const cluster = await startRedisCluster(3);
    const raw = cluster.cluster();
    // DBSIZE on a Cluster client asks one master only: the refusals' "nothing sent" is checked standalone.
    (raw as unknown as { dbsize?: unknown }).dbsize = undefined;
    return { raw, options: () => ({ redis: cluster.cluster() }), stop: () => cluster.stop() };
  });
});
