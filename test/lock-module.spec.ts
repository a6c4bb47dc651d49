import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { LOCK_MODULE_OPTIONS, LockModule, LockService, LockShutdownError } from '../lib';
import { LockEngine } from '../lib/engine/lock-engine';
import { createLockApp, sleep, waitersQueued, waitUntil } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';

const admins = new WeakMap<TestRedis, ReturnType<TestRedis['client']>>();
/** One connection of the test's own to look at the server with. */
function admin(redis: TestRedis): ReturnType<TestRedis['client']> {
  if (!admins.has(redis)) admins.set(redis, redis.client());
  return admins.get(redis)!;
}

/** Names of the server's client connections. */
async function clientNames(redis: TestRedis): Promise<string[]> {
  const list = (await admin(redis).client('LIST')) as string;
  return list
    .trim()
    .split('\n')
    .map((line) => /name=(\S*)/.exec(line)?.[1] ?? '');
}

describe('LockModule', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  describe('bad options fail bootstrap, naming the option, before any connection opens', () => {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['watchdogTimeout', { watchdogTimeout: -1 }, /"watchdogTimeout".*got -1/],
      ['watchdogTimeout', { watchdogTimeout: '30s' }, /"watchdogTimeout".*got "30s"/],
      ['defaultWaitTime', { defaultWaitTime: Number.NaN }, /"defaultWaitTime".*\(got NaN\)/],
      ['watchdogTimeout Infinity', { watchdogTimeout: Number.POSITIVE_INFINITY }, /"watchdogTimeout".*\(got Infinity\)/],
      ['commandTimeout', { commandTimeout: 0 }, /"commandTimeout" must be a whole number of milliseconds >= 1 \(got 0\)/],
      ['commandTimeout NaN', { commandTimeout: Number.NaN }, /"commandTimeout".*\(got NaN\)/],
      ['commandTimeout string', { commandTimeout: '3000' }, /"commandTimeout".*\(got "3000"\)/],
      ['fairLockWaiterTimeout', { fairLockWaiterTimeout: 0 }, /"fairLockWaiterTimeout"/],
      ['keyPrefix', { keyPrefix: 7 }, /"keyPrefix".*got 7/],
      ['redis', { redis: 'localhost:6379' }, /"redis".*got "localhost:6379"/],
      ['redlock', { redlock: { clients: [] } }, /"redlock"/],
      ['unknown key', { watchdogTimout: 100 }, /"watchdogTimout" is not a known option/],
    ];
    it.each(cases)('%s', async (_label, options, message) => {
      const before = (await clientNames(redis)).length;
      const compile = Test.createTestingModule({
        imports: [LockModule.forRoot({ redis: redis.url, ...options } as never)],
      }).compile();
      await expect(compile).rejects.toThrow(message);
      expect((await clientNames(redis)).length).toBe(before);
    });
  });

  it('forRoot() takes no argument (every option has a default) and is global by default', () => {
    const module = LockModule.forRoot();
    expect(module.global).toBe(true);
    const options = module.providers?.find((p) => typeof p === 'object' && 'provide' in p && p.provide === LOCK_MODULE_OPTIONS);
    expect(options).toMatchObject({ useValue: {} });
  });

  it('forRootAsync takes imports, inject and useFactory; isGlobal makes LockService visible everywhere', async () => {
    @Injectable()
    class ConfigService {
      readonly url = redis.url;
    }
    @Module({ providers: [ConfigService], exports: [ConfigService] })
    class ConfigModule {}
    @Injectable()
    class Consumer {
      constructor(readonly locks: LockService) {}
    }
    @Module({ providers: [Consumer] })
    class FeatureModule {}

    const moduleRef = await Test.createTestingModule({
      imports: [
        LockModule.forRootAsync({
          isGlobal: true,
          imports: [ConfigModule],
          inject: [ConfigService],
          useFactory: (config: ConfigService) => ({ redis: config.url, keyPrefix: 'async:' }),
        }),
        FeatureModule,
      ],
    }).compile();
    await moduleRef.init();
    try {
      const locks = moduleRef.get(Consumer).locks;
      expect(await locks.run('async-name', async () => redis.client().exists('async:{async-name}'))).toBe(1);
    } finally {
      await moduleRef.close();
    }
  });

  describe('global by default, as ScheduleModule and BullModule are', () => {
    @Injectable()
    class Consumer {
      constructor(readonly locks: LockService) {}
    }
    @Module({ providers: [Consumer] })
    class FeatureModule {}

    it('forRoot without isGlobal: a feature module that does not import LockModule injects LockService', async () => {
      const moduleRef = await Test.createTestingModule({ imports: [LockModule.forRoot({ redis: redis.url }), FeatureModule] }).compile();
      await moduleRef.init();
      try {
        const locks = moduleRef.get(Consumer).locks;
        expect(await locks.run('global-default', async () => admin(redis).exists('lock:{global-default}'))).toBe(1);
      } finally {
        await moduleRef.close();
      }
    });

    it('forRootAsync without isGlobal: the same', async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [LockModule.forRootAsync({ useFactory: () => ({ redis: redis.url }) }), FeatureModule],
      }).compile();
      await moduleRef.init();
      try {
        expect(moduleRef.get(Consumer).locks).toBeInstanceOf(LockService);
      } finally {
        await moduleRef.close();
      }
    });

    it.each([
      ['forRoot', () => LockModule.forRoot({ redis: redis.url, isGlobal: false })],
      ['forRootAsync', () => LockModule.forRootAsync({ isGlobal: false, useFactory: () => ({ redis: redis.url }) })],
    ])('%s with isGlobal: false keeps LockService to the modules that import it', async (_label, locks) => {
      const compile = Test.createTestingModule({ imports: [locks(), FeatureModule] }).compile();
      await expect(compile).rejects.toThrow(/Nest can't resolve dependencies of the Consumer \(\?\)/);
    });
  });

  it('forRootAsync validates what the factory returns', async () => {
    const compile = Test.createTestingModule({
      imports: [LockModule.forRootAsync({ useFactory: () => ({ redis: redis.url, defaultWaitTime: -5 }) })],
    }).compile();
    await expect(compile).rejects.toThrow(/"defaultWaitTime".*got -5/);
  });

  it('shutdown releases held locks, rejects pending waits and leaves a user-supplied client open', async () => {
    const userClient = redis.client();
    const app = await createLockApp({ redis: userClient });
    const other = await createLockApp({ redis: redis.url });
    try {
      const held = app.get(LockService).getLock('held-at-shutdown');
      await held.lock();
      await held.lock();
      const busy = other.get(LockService).getLock('busy-at-shutdown');
      await busy.lock();
      const pending = app
        .get(LockService)
        .getLock('busy-at-shutdown')
        .tryLock({ waitTime: 30_000 })
        .catch((error: unknown) => error);
      await waitersQueued(app);
      await app.close();
      expect(await pending).toBeInstanceOf(LockShutdownError);
      expect(await userClient.exists('lock:{held-at-shutdown}')).toBe(0);
      expect(userClient.status).toBe('ready');
      expect(await userClient.ping()).toBe('PONG');
      await busy.unlock();
    } finally {
      await other.close();
    }
  });

  it('shutdown closes the connections the library opened', async () => {
    const app = await createLockApp({ redis: redis.url });
    await app.get(LockService).run('opened', async () => undefined);
    const waiting = app.get(LockService).getLock('opened-2');
    await waiting.lock();
    await app.get(LockService).getLock('opened-2').tryLock({ waitTime: 20 }); // opens the subscriber
    await waitUntil(async () => (await clientNames(redis)).includes('lock-subscriber'));
    await app.close();
    await waitUntil(async () => {
      const names = await clientNames(redis);
      return !names.includes('lock-commands') && !names.includes('lock-subscriber');
    });
  });

  it('a grant answered after shutdown began is given back: the acquisition rejects LockShutdownError, nothing stays held', async () => {
    const app = await createLockApp({ redis: redis.url, commandTimeout: 5_000 });
    const engine = app.get(LockEngine);
    await app.get(LockService).run('warm-up', async () => undefined);
    await redis.pause();
    // The attempt is on the wire, unanswered, when the shutdown begins.
    const acquiring = app.get(LockService).getLock('granted-late').tryLock().catch((error: unknown) => error);
    let closing: Promise<void> | undefined;
    try {
      closing = app.close();
      await waitUntil(() => engine.shuttingDown);
    } finally {
      await redis.resume();
    }
    await closing;
    await expect(acquiring).resolves.toBeInstanceOf(LockShutdownError);
    expect(await admin(redis).exists('lock:{granted-late}')).toBe(0);
  });

  it('no leaks: 500 contended waits on 50 names leave no channel and the same two connections', async () => {
    const app = await createLockApp({ redis: redis.url });
    try {
      const locks = app.get(LockService);
      await locks.run('warm-up', async () => undefined);
      await locks.getLock('warm-up').tryLock(); // keep a hold so the next call must wait
      await locks.getLock('warm-up').tryLock({ waitTime: 10 }); // the subscriber connects
      const connectionsBefore = await clientNames(redis);
      let inside = 0;
      let overlaps = 0;
      await Promise.all(
        Array.from({ length: 50 }, (_, n) =>
          Promise.all(
            Array.from({ length: 10 }, () =>
              locks.run(
                `leak-${n}`,
                async () => {
                  if (++inside > 50) overlaps++;
                  await sleep(1);
                  inside--;
                },
                { waitTime: 30_000 },
              ),
            ),
          ),
        ),
      );
      expect(overlaps).toBe(0);
      const engine = app.get(LockEngine);
      expect(engine.subscriber.channelCount).toBe(0);
      await waitUntil(async () => ((await admin(redis).pubsub('CHANNELS')) as string[]).length === 0, 5_000);
      expect((await clientNames(redis)).sort()).toEqual(connectionsBefore.sort());
      expect(engine.holds.size).toBe(1); // only the warm-up hold
    } finally {
      await app.close();
    }
  }, 60_000);
});
