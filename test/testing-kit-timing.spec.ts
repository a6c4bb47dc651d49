import { Test, TestingModule } from '@nestjs/testing';
import { LockError, LockService, LockTimeoutError, SemaphoreService } from '../lib';
import { LockTestingControls, LockTestingModule } from '../lib/testing';

/**
 * The testing kit keeps production's timing: `WAIT` (the `syncReplicas` option) fails without a
 * replica configured to confirm it, a wall-clock step neither expires nor stretches anything.
 */

async function kit(options: Parameters<typeof LockTestingModule.forRoot>[0]): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({ imports: [LockTestingModule.forRoot(options)] }).compile();
  moduleRef.useLogger(false);
  await moduleRef.init();
  return moduleRef;
}

describe('testing kit: syncReplicas needs replicas to confirm', () => {
  let moduleRef: TestingModule | undefined;
  afterEach(async () => {
    await moduleRef?.close();
    moduleRef = undefined;
  });

  it('without replicas (the default) an acquisition with syncReplicas fails as against a server without one, and lets go', async () => {
    moduleRef = await kit({ syncReplicas: 1, syncReplicasTimeout: 50 });
    const lock = moduleRef.get(LockService).getLock('synced');
    const error = await lock.tryLock().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockError);
    expect((error as Error).message).toBe(
      'Lock "synced" was acquired but only 0 of 1 replicas confirmed it within 50 ms (syncReplicas); it was released again',
    );
    expect(await lock.isLocked()).toBe(false);
    const permit = moduleRef.get(SemaphoreService).getSemaphore('synced-sem', { permits: 1 }).tryAcquire();
    await expect(permit).rejects.toThrow('only 0 of 1 replicas confirmed it');
  });

  it('with forRoot({ replicas }) at least syncReplicas, acquisitions succeed; setReplicas(0) makes the next one fail', async () => {
    moduleRef = await kit({ syncReplicas: 2, replicas: 2 });
    const locks = moduleRef.get(LockService);
    expect(await locks.run('synced', async () => 'ran')).toBe('ran');
    moduleRef.get(LockTestingControls).setReplicas(1);
    await expect(locks.run('synced', async () => 'ran')).rejects.toThrow('only 1 of 2 replicas confirmed it');
    moduleRef.get(LockTestingControls).setReplicas(3);
    expect(await locks.run('synced', async () => 'again')).toBe('again');
  });

  it('a bad replicas count is refused, naming it', () => {
    expect(() => LockTestingModule.forRoot({ replicas: 1.5 })).toThrow('LockTestingModule option "replicas" (or setReplicas) must be a whole number >= 0 (got 1.5)');
    expect(() => LockTestingModule.forRoot({ replicas: -1 })).toThrow('(got -1)');
  });
});

describe('testing kit: a wall-clock step changes nothing', () => {
  let moduleRef: TestingModule;
  let fakeDateNow: () => number;
  beforeEach(async () => {
    jest.useFakeTimers();
    fakeDateNow = Date.now.bind(Date);
    moduleRef = await kit({});
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await moduleRef.close();
    jest.useRealTimers();
  });

  /** Steps the wall clock (`Date.now`) by `ms`, as NTP or an operator would; fake time still moves it. */
  function stepWallClock(ms: number): void {
    jest.spyOn(Date, 'now').mockImplementation(() => fakeDateNow() + ms);
  }

  it('a 2 s lease: not ended by a 5 s forward step, not stretched by a 5 s backward step', async () => {
    const locks = moduleRef.get(LockService);
    await locks.getLock('stepped').lock({ leaseTime: 2_000 });
    stepWallClock(5_000);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(await locks.getLock('stepped').isLocked()).toBe(true);
    stepWallClock(-5_000);
    await jest.advanceTimersByTimeAsync(1_010);
    expect(await locks.getLock('stepped').isLocked()).toBe(false);
  });

  it('a 3 s wait: not ended early by a 5 s forward step, not stretched by a 5 s backward step', async () => {
    const locks = moduleRef.get(LockService);
    await moduleRef.get(LockTestingControls).holdElsewhere('waited');
    let settled = false;
    const waiting = locks
      .run('waited', async () => 'ran', { waitTime: 3_000 })
      .catch((e: unknown) => e)
      .finally(() => (settled = true));
    stepWallClock(5_000);
    await jest.advanceTimersByTimeAsync(1_500);
    expect(settled).toBe(false);
    stepWallClock(-5_000);
    await jest.advanceTimersByTimeAsync(1_600);
    expect(settled).toBe(true);
    expect(await waiting).toBeInstanceOf(LockTimeoutError);
  });
});

describe('testing kit without fengari', () => {
  it('LockTestingModule.forRoot names the package to install', () => {
    jest.isolateModules(() => {
      jest.doMock('fengari', () => {
        throw Object.assign(new Error("Cannot find module 'fengari'"), { code: 'MODULE_NOT_FOUND' });
      });
      const isolated = require('../lib/testing') as typeof import('../lib/testing');
      expect(() => isolated.LockTestingModule.forRoot()).toThrow(
        'nestjs-redis-locks/testing runs the library\'s Lua scripts with the package "fengari", which is not installed: npm i -D fengari',
      );
      expect(() => isolated.LockTestingModule.forRootAsync({ useFactory: () => ({}) })).toThrow('npm i -D fengari');
    });
    jest.dontMock('fengari');
  });
});
