import { Controller, Get, INestApplication, Injectable, Logger, Module, Param } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import request from 'supertest';
import {
  DistributedLock,
  FairLockService,
  LockDeadlockError,
  LockLostError,
  LockModule,
  LockService,
  LockTimeoutError,
  LockUnavailableError,
  ReadWriteLockService,
  SemaphoreService,
} from '../lib';
import { LockTestingControls, LockTestingModule } from '../lib/testing';
import { leaseDriftMs } from '../lib/runtime/held-locks';
import { LockEngine } from '../lib/engine/lock-engine';
import { deferred, waitUntil } from './support/lock-app';
import { kitEngine, type EngineHandle } from './support/lock-contract';

/** The kind of service an app unit-tests: a decorated method, and a long job that watches its signal. */
@Injectable()
class OrdersService {
  readonly events: string[] = [];
  constructor(private readonly locks: LockService) {}

  @DistributedLock('order:#id', { waitTime: 100 })
  async pay(id: string): Promise<string> {
    return `paid ${id}`;
  }

  /** Stops at the first step after the lock was lost instead of carrying on unprotected. */
  async export(id: string, step: () => Promise<void>): Promise<string> {
    return this.locks.run(`export:${id}`, async ({ signal }) => {
      for (let i = 0; i < 100; i++) {
        if (signal.aborted) {
          this.events.push(`stopped: ${(signal.reason as Error).name}`);
          return 'stopped';
        }
        await step();
      }
      return 'done';
    });
  }
}

@Controller('orders')
class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Get(':id/pay')
  pay(@Param('id') id: string): Promise<string> {
    return this.orders.pay(id);
  }
}

describe('testing kit: controls', () => {
  let moduleRef: TestingModule;
  let app: INestApplication;
  let controls: LockTestingControls;
  let orders: OrdersService;

  beforeAll(async () => {
    moduleRef = await Test.createTestingModule({
      imports: [LockTestingModule.forRoot({ watchdogTimeout: 600 })],
      controllers: [OrdersController],
      providers: [OrdersService],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    controls = moduleRef.get(LockTestingControls);
    orders = moduleRef.get(OrdersService);
  });
  afterAll(() => app?.close());
  beforeEach(() => controls.reset());

  it('decorated route: 200 when free, 423 Locked while another process holds the key', async () => {
    const server = app.getHttpServer();
    expect((await request(server).get('/orders/7/pay')).text).toBe('paid 7');
    const hold = await controls.holdElsewhere('order:7');
    const res = await request(server).get('/orders/7/pay');
    expect(res.status).toBe(423);
    expect(res.body).toMatchObject({ statusCode: 423, error: 'Locked', lockName: 'order:7', waitTime: 100 });
    expect((await request(server).get('/orders/8/pay')).status).toBe(200); // another key is free
    await hold.release();
    expect((await request(server).get('/orders/7/pay')).status).toBe(200);
  });

  it('setUnavailable: 503 with Retry-After over HTTP, LockUnavailableError in code, and back again', async () => {
    controls.setUnavailable(true);
    const res = await request(app.getHttpServer()).get('/orders/9/pay');
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBeDefined();
    expect(res.body).toMatchObject({ statusCode: 503, error: 'Service Unavailable', lockName: 'order:9' });
    const locks = moduleRef.get(LockService);
    await expect(locks.run('x', async () => 'ran', { waitTime: 0 })).rejects.toBeInstanceOf(LockUnavailableError);
    await expect(locks.getLock('x').tryLock()).rejects.toBeInstanceOf(LockUnavailableError);
    await expect(moduleRef.get(SemaphoreService).run('s', async () => 'ran', { permits: 1, waitTime: 0 })).rejects.toBeInstanceOf(
      LockUnavailableError,
    );
    controls.setUnavailable(false);
    expect((await request(app.getHttpServer()).get('/orders/9/pay')).status).toBe(200);
  });

  it('a wait that began while Redis was down acquires once it is back', async () => {
    controls.setUnavailable(true);
    const acquired = moduleRef.get(LockService).run('back', async () => 'ran', { waitTime: 5_000 });
    await new Promise((r) => setTimeout(r, 50));
    controls.setUnavailable(false);
    await expect(acquired).resolves.toBe('ran');
  });

  it('loseLock: the holder sees signal abort with LockLostError at the next watchdog round, stops, and run does not throw', async () => {
    const stepped = deferred();
    let steps = 0;
    const running = orders.export('e1', async () => {
      if (++steps === 1) stepped.resolve();
      await new Promise((r) => setTimeout(r, 5));
    });
    await stepped.promise;
    const engine = moduleRef.get(LockEngine);
    const [hold] = engine.holds.all().filter((h) => h.name === 'export:e1');
    await controls.loseLock('export:e1');
    // As in production: nothing notices before the watchdog's next round (every 200 ms here).
    expect(hold.aborted).toBe(false);
    await expect(running).resolves.toBe('stopped');
    expect(orders.events).toEqual(['stopped: LockLostError']);
    // The lock is free for the next caller.
    expect(await moduleRef.get(LockService).getLock('export:e1').isLocked()).toBe(false);
  });

  it('loseLock on a fixed-lease hold: its signal aborts when its lease ends, as nothing renews it', async () => {
    const gate = deferred();
    let signal: AbortSignal | undefined;
    const startedAt = performance.now();
    const running = moduleRef.get(LockService).run(
      'leased',
      async (context) => {
        signal = context.signal;
        await gate.promise;
        return 'finished';
      },
      { leaseTime: 400 },
    );
    await waitUntil(() => signal !== undefined);
    await controls.loseLock('leased');
    expect(signal!.aborted).toBe(false);
    await new Promise((resolve) => signal!.addEventListener('abort', resolve, { once: true }));
    // Its local end: the lease less the drift margin, counted from when the attempt was sent.
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(400 - leaseDriftMs(400) - 1);
    expect(signal!.reason).toBeInstanceOf(LockLostError);
    gate.resolve();
    await expect(running).resolves.toBe('finished');
  });

  it('holdElsewhere exclusive: the reentrant and the fair lock of the name are busy until release', async () => {
    const hold = await controls.holdElsewhere('shared');
    expect(await moduleRef.get(LockService).getLock('shared').tryLock()).toBe(false);
    expect(await moduleRef.get(FairLockService).getLock('shared').tryLock()).toBe(false);
    const waiting = moduleRef.get(FairLockService).run('shared', async () => 'mine', { waitTime: 5_000 });
    await hold.release();
    await expect(waiting).resolves.toBe('mine');
    await hold.release(); // a second release does nothing
  });

  it('holdElsewhere read: other readers share it, a writer waits; write: everyone waits', async () => {
    const rw = moduleRef.get(ReadWriteLockService);
    const reading = await controls.holdElsewhere('doc', { mode: 'read' });
    await expect(rw.runRead('doc', async () => 'read too', { waitTime: 0 })).resolves.toBe('read too');
    await expect(rw.runWrite('doc', async () => 'wrote', { waitTime: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
    await reading.release();
    const writing = await controls.holdElsewhere('doc', { mode: 'write' });
    await expect(rw.runRead('doc', async () => 'read', { waitTime: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
    await expect(rw.runWrite('doc', async () => 'wrote', { waitTime: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
    await writing.release();
    await expect(rw.runWrite('doc', async () => 'wrote', { waitTime: 0 })).resolves.toBe('wrote');
  });

  it('holdElsewhere permits: takes all permits of the semaphore, or `take` of them', async () => {
    const semaphores = moduleRef.get(SemaphoreService);
    const all = await controls.holdElsewhere('pool', { permits: 3 });
    expect(await semaphores.getSemaphore('pool', { permits: 3 }).tryAcquire()).toBeNull();
    await all.release();
    const some = await controls.holdElsewhere('pool', { permits: 3, take: 2 });
    const permit = await semaphores.getSemaphore('pool', { permits: 3 }).tryAcquire();
    expect(permit).not.toBeNull();
    expect(await semaphores.getSemaphore('pool', { permits: 3 }).tryAcquire()).toBeNull();
    await permit!.release();
    await some.release();
  });

  it('holdElsewhere rejects a bad mode or mixed options with an error naming the lock', async () => {
    await expect(controls.holdElsewhere('bad', { mode: 'sideways' as 'read' })).rejects.toThrow(/holdElsewhere\("bad"\).*mode/);
    await expect(controls.holdElsewhere('bad', { mode: 'read', permits: 2 })).rejects.toThrow(/holdElsewhere\("bad"\)/);
  });

  it('acquisitions: every acquisition of the app in order, with kind, outcome and fencing token; reset clears it', async () => {
    const locks = moduleRef.get(LockService);
    await locks.run('a', async () => undefined);
    const hold = await controls.holdElsewhere('b');
    await locks.run('b', async () => undefined, { waitTime: 0 }).catch(() => undefined);
    await hold.release();
    await moduleRef.get(ReadWriteLockService).runRead('c', async () => undefined);
    await locks.run(['d', 'e'], async () => undefined);
    await moduleRef.get(SemaphoreService).run('f', async () => undefined, { permits: 2 });
    controls.setUnavailable(true);
    await locks.run('g', async () => undefined, { waitTime: 0 }).catch(() => undefined);
    controls.setUnavailable(false);
    const seen = controls.acquisitions.map(({ name, kind, outcome }) => `${name} ${kind} ${outcome}`);
    expect(seen).toEqual([
      'a reentrant acquired',
      'b reentrant timeout',
      'c read acquired',
      'd,e multi acquired',
      'f semaphore acquired',
      'g reentrant unavailable',
    ]);
    expect(controls.acquisitions[0].fencingToken).toEqual(expect.any(Number));
    expect(controls.acquisitions[1].fencingToken).toBeUndefined();
    expect(controls.acquisitions[2].fencingToken).toBeUndefined(); // read locks carry no token
    await controls.reset();
    expect(controls.acquisitions).toEqual([]);
  });

  it('acquisitions: a wait refused as a deadlock is recorded with outcome deadlock', async () => {
    const lock = moduleRef.get(LockService).getLock('h');
    // The refusal built by hand on the lock's own acquisition (the detection is tested elsewhere).
    jest
      .spyOn(lock as unknown as { acquire: () => Promise<boolean> }, 'acquire')
      .mockRejectedValueOnce(new LockDeadlockError([{ lock: 'i', owner: 'c0ffee:1' }, { lock: 'h', owner: 'beef:1' }]));
    await expect(lock.tryLock({ waitTime: 1_000 })).rejects.toBeInstanceOf(LockDeadlockError);
    expect(controls.acquisitions.map(({ name, kind, outcome }) => `${name} ${kind} ${outcome}`)).toEqual(['h reentrant deadlock']);
  });

  it('inspect and current() work as with Redis', async () => {
    const locks = moduleRef.get(LockService);
    const info = await locks.run('seen', async () => {
      expect(locks.current()).toMatchObject({ name: 'seen', fencingToken: expect.any(Number) });
      return locks.inspect('seen');
    });
    expect(info).toMatchObject({ name: 'seen', kind: 'reentrant', locked: true, holders: [{ holdCount: 1 }] });
    expect(info.holders[0].instance?.pid).toBe(process.pid);
    expect((await locks.inspect('seen')).locked).toBe(false);
  });
});

/** An app as users write it: the lock module's import kept in a constant, so a test can replace it. */
export const locks = LockModule.forRoot({ redis: 'redis://no-such-host.invalid:6379' });
export const asyncLocks = LockModule.forRootAsync({ useFactory: () => ({ redis: 'redis://no-such-host.invalid:6379' }) });

@Module({ imports: [locks], controllers: [OrdersController], providers: [OrdersService] })
class AppModule {}

@Module({ imports: [asyncLocks], providers: [OrdersService] })
class AsyncAppModule {}

describe('testing kit: replacing the app\'s LockModule', () => {
  it('overrideModule(locks).useModule(LockTestingModule.forRoot()): no Redis is reached, the controls are injectable', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideModule(locks)
      .useModule(LockTestingModule.forRoot())
      .compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    try {
      await moduleRef.get(LockTestingControls).holdElsewhere('order:1');
      expect((await request(app.getHttpServer()).get('/orders/1/pay')).status).toBe(423);
      expect((await request(app.getHttpServer()).get('/orders/2/pay')).status).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('the same with the object forRootAsync returned', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [AsyncAppModule] })
      .overrideModule(asyncLocks)
      .useModule(LockTestingModule.forRoot())
      .compile();
    await moduleRef.init();
    try {
      expect(await moduleRef.get(OrdersService).pay('3')).toBe('paid 3');
    } finally {
      await moduleRef.close();
    }
  });

  it('overrideModule(LockModule) does not match a forRoot() import (Nest matches by identity): the app keeps its LockModule', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideModule(LockModule)
      .useModule(LockTestingModule.forRoot())
      .compile();
    expect(() => moduleRef.get(LockTestingControls)).toThrow();
    // Not initialised, so nothing was connected or started; closing it would send its shutdown
    // clean-up to the app's (unreachable) Redis.
  });
});

describe('testing kit: options', () => {
  it('redlock.clients name independent in-memory masters: getRedLock works over them', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [LockTestingModule.forRoot({ redlock: { clients: ['redis://a', 'redis://b', 'redis://c'] } })],
    }).compile();
    await moduleRef.init();
    try {
      const locks = moduleRef.get(LockService);
      const red = locks.getRedLock('report');
      expect(await red.tryLock()).toBe(true);
      expect(red.getFencingToken()).toEqual(expect.any(Number));
      expect(await locks.getRedLock('report').tryLock()).toBe(false);
      await red.unlock();
      expect(controls(moduleRef).acquisitions.map(({ kind, outcome }) => `${kind} ${outcome}`)).toEqual(['redlock acquired', 'redlock timeout']);
    } finally {
      await moduleRef.close();
    }
  });

  describe('global by default, as LockModule is', () => {
    @Injectable()
    class Elsewhere {
      constructor(
        readonly locks: LockService,
        readonly kit: LockTestingControls,
      ) {}
    }
    @Module({ providers: [Elsewhere], exports: [Elsewhere] })
    class FeatureModule {}

    it.each([
      ['without isGlobal', {}],
      ['isGlobal: true', { isGlobal: true }],
    ])('%s: the services and controls reach modules that do not import it', async (_label, options) => {
      const moduleRef = await Test.createTestingModule({ imports: [LockTestingModule.forRoot(options), FeatureModule] }).compile();
      await moduleRef.init();
      try {
        const feature = moduleRef.get(Elsewhere);
        await feature.kit.holdElsewhere('g');
        expect(await feature.locks.getLock('g').tryLock()).toBe(false);
      } finally {
        await moduleRef.close();
      }
    });

    it('isGlobal: false keeps them to the modules that import it', async () => {
      const compile = Test.createTestingModule({ imports: [LockTestingModule.forRoot({ isGlobal: false }), FeatureModule] }).compile();
      await expect(compile).rejects.toThrow(/Nest can't resolve dependencies of the Elsewhere \(\?, LockTestingControls\)/);
    });
  });

  it('bad options fail at bootstrap with the same errors as LockModule', async () => {
    await expect(Test.createTestingModule({ imports: [LockTestingModule.forRoot({ watchdogTimeout: -1 })] }).compile()).rejects.toThrow(
      /watchdogTimeout/,
    );
  });
});

const controls = (moduleRef: TestingModule) => moduleRef.get(LockTestingControls);

describe('testing kit: NODE_ENV=production', () => {
  it('warns once (Nest Logger) that the kit is not for production', async () => {
    const previous = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      for (let i = 0; i < 2; i++) {
        const moduleRef = await Test.createTestingModule({ imports: [LockTestingModule.forRoot()] }).compile();
        await moduleRef.close();
      }
      const kitWarnings = warn.mock.calls.filter(([message]) => String(message).includes('LockTestingModule'));
      expect(kitWarnings).toHaveLength(1);
      expect(String(kitWarnings[0][0])).toMatch(/NODE_ENV=production/);
    } finally {
      warn.mockRestore();
      process.env.NODE_ENV = previous;
    }
  });
});

/**
 * The kit finds the same deadlocks (docs/deadlocks.md#the-testing-kit): the same engine, and the
 * deadlock scripts run on its in-memory Redis. Across processes: two module instances sharing the
 * kit's simulated network, as the contract suite shares it.
 */
describe('testing kit: deadlocks', () => {
  const CHECK_AFTER = 200;
  let engine: EngineHandle;
  let app: TestingModule;
  let other: TestingModule;

  beforeAll(async () => {
    engine = await kitEngine.start();
    app = await engine.createApp({ redis: engine.url, deadlockCheckAfter: CHECK_AFTER });
    other = await engine.createApp({ redis: engine.url, deadlockCheckAfter: CHECK_AFTER });
  });
  afterAll(async () => {
    await app?.close();
    await other?.close();
  });

  /** Takes `first`, then (once the other party holds its own) `second`: one half of a cycle. */
  function half(locks: LockService, first: string, second: string, inside: { mine: boolean; theirs: () => boolean }) {
    return locks.run(
      first,
      async () => {
        inside.mine = true;
        await waitUntil(inside.theirs);
        return locks.run(second, async () => `${first} then ${second}`, { waitTime: 20_000 });
      },
      { waitTime: 20_000 },
    );
  }

  async function oneRefused(parties: Array<Promise<string>>): Promise<{ error: LockDeadlockError; survivor: string }> {
    const results = await Promise.allSettled(parties);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    const done = results.filter((r): r is PromiseFulfilledResult<string> => r.status === 'fulfilled');
    expect(refused).toHaveLength(1);
    expect(done).toHaveLength(1);
    expect(refused[0].reason).toBeInstanceOf(LockDeadlockError);
    return { error: refused[0].reason as LockDeadlockError, survivor: done[0].value };
  }

  it('A->B / B->A in one process: one wait refused at once naming both locks, the other finishes', async () => {
    const locks = app.get(LockService);
    const one = { mine: false, theirs: () => two.mine };
    const two = { mine: false, theirs: () => one.mine };
    const started = Date.now();
    const { error } = await oneRefused([half(locks, 'kit-a', 'kit-b', one), half(locks, 'kit-b', 'kit-a', two)]);
    expect(Date.now() - started).toBeLessThan(CHECK_AFTER); // in one process: at once, not after the check
    expect([...error.lockName].sort()).toEqual(['kit-a', 'kit-b']);
    expect(error.message).toMatch(/^Deadlock: /);
  });

  it('A->B / B->A across two module instances: refused within 1.5 x deadlockCheckAfter (plus the steps), the other finishes', async () => {
    const one = { mine: false, theirs: () => two.mine };
    const two = { mine: false, theirs: () => one.mine };
    const started = Date.now();
    const { error } = await oneRefused([
      half(app.get(LockService), 'kit-x', 'kit-y', one),
      half(other.get(LockService), 'kit-y', 'kit-x', two),
    ]);
    expect(Date.now() - started).toBeLessThan(1.5 * CHECK_AFTER + 1_000);
    expect([...error.lockName].sort()).toEqual(['kit-x', 'kit-y']);
    expect(error.cycle.every((step) => typeof step.owner === 'string' && step.owner.length > 0)).toBe(true);
  });

  it('the nested read behind a writer in line is refused, and the writer then gets the lock', async () => {
    const rw = app.get(ReadWriteLockService);
    const field = rw.getReadWriteLock('kit-doc'); // made outside the body: another owner
    const writerLock = rw.getReadWriteLock('kit-doc');
    let reading = false;
    const outer = rw.runRead('kit-doc', async () => {
      reading = true;
      await waitUntil(async () => ((await rw.inspect('kit-doc')).waiters?.length ?? 0) > 0);
      await field.readLock().tryLock({ waitTime: 20_000 });
    });
    await waitUntil(() => reading);
    const writer = writerLock.writeLock().tryLock({ waitTime: 20_000 });
    await expect(outer).rejects.toBeInstanceOf(LockDeadlockError);
    expect(await writer).toBe(true);
    await writerLock.writeLock().unlock();
  });
});
