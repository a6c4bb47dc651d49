import { Body, Controller, Injectable, INestApplication, Param, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import Redis from 'ioredis';
import request from 'supertest';
import {
  DistributedLock,
  FairLock,
  FairLockService,
  LockContext,
  LockLostError,
  LockModule,
  LockRunContext,
  LockService,
  ReadLock,
  ReadWriteLockService,
  WriteLock,
} from '../lib';
import { LockEngine } from '../lib/engine/lock-engine';
import { waitUntil } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';

@Injectable()
class InnerWork {
  constructor(readonly locks: LockService) {}

  @DistributedLock('inner:#id')
  async work(id: string, @LockContext() context?: LockRunContext) {
    return { id, context, current: this.locks.current() };
  }

  @WriteLock('doc:#id')
  async write(id: string, @LockContext() context?: LockRunContext) {
    return { context, nested: await this.read(id) };
  }

  @ReadLock('doc:#id')
  async read(id: string, @LockContext() context?: LockRunContext) {
    return { context, current: this.locks.current() };
  }
}

@Injectable()
class OuterWork {
  constructor(
    private readonly inner: InnerWork,
    private readonly fair: FairLockService,
    private readonly rw: ReadWriteLockService,
  ) {}

  @FairLock('outer:#id')
  async run(id: string, @LockContext() context?: LockRunContext) {
    const before = this.fair.current();
    const inner = await this.inner.work(id);
    const after = this.rw.current();
    return { context, before, inner, after };
  }
}

@Controller('orders')
class OrdersController {
  constructor(private readonly locks: LockService) {}

  @Post(':id/pay')
  @DistributedLock('order:#id')
  async pay(@Param('id') id: string, @LockContext() lock: LockRunContext, @Body() body: { amount: number }) {
    return { id, amount: body.amount, name: lock.name, token: lock.fencingToken, same: lock === this.locks.current() };
  }
}

describe('current() and @LockContext()', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: INestApplication;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: redis.url, watchdogTimeout: 600 })],
      controllers: [OrdersController],
      providers: [InnerWork, OuterWork],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });

  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('is undefined outside any lock', () => {
    expect(app.get(LockService).current()).toBeUndefined();
    expect(app.get(FairLockService).current()).toBeUndefined();
    expect(app.get(ReadWriteLockService).current()).toBeUndefined();
  });

  it('gives the innermost lock of nested decorated calls; the parameter is the same object', async () => {
    const result = await app.get(OuterWork).run('7');
    expect(result.context).toMatchObject({ name: 'outer:7' });
    expect(typeof result.context!.fencingToken).toBe('number');
    expect(result.context!.signal.aborted).toBe(false);
    expect(result.before).toBe(result.context);
    expect(result.inner.current).toBe(result.inner.context);
    expect(result.inner.context).toMatchObject({ name: 'inner:7' });
    expect(result.inner.context!.fencingToken).not.toBe(result.context!.fencingToken);
    // Back in the outer method, the outer lock is the innermost again.
    expect(result.after).toBe(result.context);
    expect(app.get(LockService).current()).toBeUndefined();
  });

  it('a read lock nested in the write lock of the same name is the innermost (no token)', async () => {
    const result = await app.get(InnerWork).write('d1');
    expect(result.context).toMatchObject({ name: 'doc:d1' });
    expect(typeof result.context!.fencingToken).toBe('number');
    expect(result.nested.context).toMatchObject({ name: 'doc:d1', fencingToken: undefined });
    expect(result.nested.current).toBe(result.nested.context);
  });

  it('fills the parameter on a controller, next to @Param and @Body', async () => {
    const response = await request(app.getHttpServer()).post('/orders/42/pay').send({ amount: 5 }).expect(201);
    expect(response.body).toMatchObject({ id: '42', amount: 5, name: 'order:42', same: true });
    expect(typeof response.body.token).toBe('number');
  });

  it('is the run() context, whose signal aborts with LockLostError when the lock is lost', async () => {
    const locks = app.get(LockService);
    await locks.run('current:lost', async (context) => {
      const current = locks.current()!;
      expect(current).toBe(context);
      expect(current.name).toBe('current:lost');
      await raw.del('lock:{current:lost}'); // the lock vanishes behind the holder's back
      await app.get(LockEngine).watchdog.renewNow();
      await waitUntil(() => current.signal.aborted, 5_000);
      expect(current.signal.reason).toBeInstanceOf(LockLostError);
    });
    expect(locks.current()).toBeUndefined();
  });
});
