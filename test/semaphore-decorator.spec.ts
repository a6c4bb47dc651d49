import { Injectable, Module, Type } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { DistributedSemaphore, KeyTemplateError, LockContext, LockModule, LockRunContext, LockTimeoutError, SemaphoreService } from '../lib';
import { createLockApp, waitUntil } from './support/lock-app';
import { OverlapProbe } from './support/overlap-probe';
import { startRedis, TestRedis } from './support/redis-server';

const probe = new OverlapProbe();

@Injectable()
class ExportService {
  @DistributedSemaphore('export:#tenantId', { permits: 2 })
  async export(tenantId: string, job: number): Promise<number | undefined> {
    return probe.enter(`export:${tenantId}`, job);
  }

  @DistributedSemaphore('heavy:#{tenantId}', { permits: 3, take: 2, waitTime: 100 })
  async heavy(tenantId: string, @LockContext() lock?: LockRunContext): Promise<LockRunContext | undefined> {
    await probe.enter(`heavy:${tenantId}`);
    return lock;
  }

  @DistributedSemaphore((job: { id?: string }) => `fn:${job.id}`, { permits: 1 })
  async byFunction(job: { id?: string }): Promise<string> {
    return `ran ${job.id}`;
  }

  @DistributedSemaphore('bad:#id', { permits: 1 })
  async badValue(id: unknown): Promise<void> {}
}

describe('@DistributedSemaphore', () => {
  let redis: TestRedis;
  let app: TestingModule;
  let service: ExportService;
  beforeAll(async () => {
    redis = await startRedis();
    app = await createLockApp({ redis: redis.url }, [ExportService]);
    service = app.get(ExportService);
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });
  beforeEach(() => probe.reset());

  it('at most `permits` calls per key run at once; other keys are independent; the others run as permits come back', async () => {
    const calls = [1, 2, 3, 4, 5].map((job) => service.export('acme', job));
    const other = service.export('globex', 9);
    await waitUntil(() => probe.inside('export:acme') === 2 && probe.inside('export:globex') === 1);
    await waitUntil(async () => (await app.get(SemaphoreService).inspect('export:acme')).waiters.length === 3);
    expect(probe.inside('export:acme')).toBe(2);
    // Let them go one by one: each release admits exactly one waiter.
    for (let i = 0; i < 5; i++) {
      await waitUntil(() => probe.entered.filter((e) => e.key === 'export:acme').length >= Math.min(5, i + 2));
      probe.entered.filter((e) => e.key === 'export:acme')[i].leave();
    }
    probe.entered.find((e) => e.key === 'export:globex')?.leave();
    expect(await Promise.all(calls)).toEqual([1, 2, 3, 4, 5]);
    expect(await other).toBe(9);
    expect(probe.maxInside('export:acme')).toBe(2);
  });

  it('takes `take` permits; @LockContext() receives name, signal and fencingToken; LockTimeoutError when none come in time', async () => {
    const first = service.heavy('t1', undefined);
    await waitUntil(() => probe.inside('heavy:t1') === 1);
    // 2 of 3 permits taken: a second call (2 more) times out without running.
    await expect(service.heavy('t1', undefined)).rejects.toBeInstanceOf(LockTimeoutError);
    expect(probe.entered).toHaveLength(1);
    probe.leave(0);
    const context = (await first) as LockRunContext;
    expect(context.name).toBe('heavy:t1');
    expect(Number.isSafeInteger(context.fencingToken)).toBe(true);
    expect(context.signal.aborted).toBe(false);
  });

  it('a key function names the semaphore; a value that cannot make a key throws KeyTemplateError before anything runs', async () => {
    expect(await service.byFunction({ id: '7' })).toBe('ran 7');
    await expect(service.badValue(undefined)).rejects.toBeInstanceOf(KeyTemplateError);
    await expect(service.badValue({})).rejects.toBeInstanceOf(KeyTemplateError);
  });
});

describe('@DistributedSemaphore at bootstrap', () => {
  async function bootstrap(provider: Type): Promise<unknown> {
    @Module({ imports: [LockModule.forRoot({ redis: 'redis://127.0.0.1:1' })], providers: [provider] })
    class AppModule {}
    let moduleRef: TestingModule | undefined;
    try {
      moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
      moduleRef.useLogger(false);
      await moduleRef.init();
      return undefined;
    } catch (error) {
      return error;
    } finally {
      // close() rethrows a failed bootstrap's error.
      await moduleRef?.close().catch(() => undefined);
    }
  }

  it('fails the bootstrap naming class, method and the problem', async () => {
    @Injectable()
    class UnknownParameter {
      @DistributedSemaphore('export:#tenant', { permits: 2 })
      async run(tenantId: string): Promise<void> {}
    }
    @Injectable()
    class NoPermits {
      @DistributedSemaphore('export:#id', {} as { permits: number })
      async run(id: string): Promise<void> {}
    }
    @Injectable()
    class TakeTooBig {
      @DistributedSemaphore('export:#id', { permits: 2, take: 3 })
      async run(id: string): Promise<void> {}
    }
    @Injectable()
    class UnknownOption {
      @DistributedSemaphore('export:#id', { permits: 2, mode: 'fair' } as never)
      async run(id: string): Promise<void> {}
    }
    @Injectable()
    class BadWait {
      @DistributedSemaphore('export:#id', { permits: 2, waitTime: -1 })
      async run(id: string): Promise<void> {}
    }
    expect(String(await bootstrap(UnknownParameter))).toMatch(/UnknownParameter\.run.*"tenant"/);
    expect(String(await bootstrap(NoPermits))).toMatch(/@DistributedSemaphore on NoPermits\.run: option "permits" must be a whole number >= 1/);
    expect(String(await bootstrap(TakeTooBig))).toMatch(/TakeTooBig\.run: option "take" must be a whole number from 1 to permits \(2\) \(got 3\)/);
    expect(String(await bootstrap(UnknownOption))).toMatch(/UnknownOption\.run: option "mode"/);
    expect(String(await bootstrap(BadWait))).toMatch(/BadWait\.run: option "waitTime"/);
  });

  it('names @DistributedSemaphore (not @DistributedLock) in key template, option, bootstrap and call-time errors', async () => {
    @Injectable()
    class BadPosition {
      @DistributedSemaphore('export:#2', { permits: 2 })
      async run(id: string): Promise<void> {}
    }
    @Injectable()
    class BadLease {
      @DistributedSemaphore('export:#id', { permits: 2, leaseTime: 0 })
      async run(id: string): Promise<void> {}
    }
    @Injectable()
    class Synchronous {
      // @ts-expect-error TS1241: the decorator's type takes only methods returning a Promise.
      @DistributedSemaphore('export:#id', { permits: 2 })
      run(id: string): string {
        return id;
      }
    }
    @Injectable()
    class Shared {
      @DistributedSemaphore('export:#id', { permits: 2 })
      async run(id: string): Promise<void> {}
    }
    const messageOf = async (provider: Type) => String((await bootstrap(provider)) as Error);
    // key template
    expect(await messageOf(BadPosition)).toContain(
      '@DistributedSemaphore on BadPosition.run: key template "export:#2" uses #2, but BadPosition.run declares 1 parameter',
    );
    // options checked by the machinery shared with @DistributedLock
    expect(await messageOf(BadLease)).toContain(
      '@DistributedSemaphore on BadLease.run: option "leaseTime" must be a whole number of milliseconds > 0 (got 0)',
    );
    expect(await messageOf(Synchronous)).toContain('@DistributedSemaphore on Synchronous.run: the method is declared to return String');
    // bootstrap: two LockModules that could serve the provider
    const twoModules = await Test.createTestingModule({
      imports: [
        LockModule.forRoot({ redis: 'redis://127.0.0.1:1', isGlobal: false }),
        LockModule.forRoot({ redis: 'redis://127.0.0.1:1', keyPrefix: 'other:', isGlobal: false }),
      ],
      providers: [Shared],
    }).compile();
    twoModules.useLogger(false);
    await expect(twoModules.init()).rejects.toThrow('Shared.run is decorated with @DistributedSemaphore and 2 LockModule instances could serve it');
    await twoModules.close().catch(() => undefined);
    // call time: an instance no LockModule serves; and where it is decorated: a static method
    await expect(new Shared().run('a')).rejects.toThrow('Shared.run is decorated with @DistributedSemaphore but its instance is not known to any LockModule');
    expect(() => {
      class Static {
        @DistributedSemaphore('x', { permits: 1 })
        static async run(): Promise<void> {}
      }
      return Static;
    }).toThrow('@DistributedSemaphore on Static.run: static methods cannot be decorated');
    const all = [BadPosition, BadLease, Synchronous].map(messageOf);
    for (const message of await Promise.all(all)) expect(message).not.toContain('@DistributedLock');
  });
});
