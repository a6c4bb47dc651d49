import {
  CallHandler,
  CanActivate,
  Controller,
  ExecutionContext,
  Get,
  HttpCode,
  Injectable,
  INestApplication,
  NestInterceptor,
  NotFoundException,
  Param,
  ParseIntPipe,
  Post,
  Scope,
  SetMetadata,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type Redis from 'ioredis';
import type { Observable } from 'rxjs';
import request from 'supertest';
import {
  DistributedLock,
  FairLock,
  LockDeadlockError,
  LockModule,
  LockService,
  LockShutdownError,
  LockTimeoutError,
  ReadLock,
  WriteLock,
} from '../lib';
import { released, waitUntil } from './support/lock-app';
import { OverlapProbe } from './support/overlap-probe';
import { startRedis, TestRedis } from './support/redis-server';

/**
 * @DistributedLock on real Redis: exclusion and overlap on services and controllers, across two
 * applications in one process (as far as Redis can tell, two processes), HTTP behaviour, re-entry,
 * release on error, and the fair / read / write modes.
 */

@Injectable()
class ItemService {
  constructor(
    private readonly probe: OverlapProbe,
    private readonly locks: LockService,
  ) {}

  @DistributedLock('item:#id', { waitTime: 10_000 })
  async work(id: string): Promise<string> {
    await this.probe.enter(`item:${id}`);
    return `worked ${id}`;
  }

  @DistributedLock('item:#id', { waitTime: 200 })
  async nested(id: string): Promise<number[]> {
    const outer = await this.locks.getLock(`item:${id}`).getHoldCount();
    const inner = await this.innerHoldCount(id);
    return [outer, inner];
  }

  @DistributedLock('item:#id', { waitTime: 200 })
  async innerHoldCount(id: string): Promise<number> {
    return this.locks.getLock(`item:${id}`).getHoldCount();
  }

  @DistributedLock('item:#id')
  async fails(id: string): Promise<never> {
    throw new NotFoundException(`no item ${id}`);
  }

  @DistributedLock('item:#id', { waitTime: 100 })
  async quick(id: string): Promise<string> {
    return id;
  }

  @SetMetadata('below', 'kept')
  @DistributedLock('item:#id')
  @SetMetadata('above', 'kept')
  async decorated(id: string, second?: number): Promise<string> {
    return `${id}${second ?? ''}`;
  }
}

/** Locks through another provider: re-entry must work across providers too. */
@Injectable()
class OrderService {
  constructor(private readonly items: ItemService) {}

  @DistributedLock('item:#itemId', { waitTime: 200 })
  async order(itemId: string): Promise<number[]> {
    return this.items.nested(itemId);
  }
}

@Injectable()
class ModeService {
  constructor(private readonly probe: OverlapProbe) {}

  @ReadLock('doc:#id', { waitTime: 10_000 })
  async read(id: string): Promise<void> {
    await this.probe.enter(`doc:${id}`);
  }

  @WriteLock('doc:#id', { waitTime: 10_000 })
  async write(id: string): Promise<void> {
    await this.probe.enter(`doc:${id}`);
  }

  @FairLock('queue:#id', { waitTime: 10_000 })
  async fair(id: string): Promise<void> {
    await this.probe.enter(`queue:${id}`);
  }
}

/** Lets a request through unless it carries `x-deny`. */
@Injectable()
class DenyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-deny'] === undefined;
  }
}

/** Marks the response, to show interceptors still run around a locked route. */
@Injectable()
class MarkInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    context.switchToHttp().getResponse<{ setHeader(name: string, value: string): void }>().setHeader('x-intercepted', 'yes');
    return next.handle();
  }
}

@Injectable({ scope: Scope.REQUEST })
class PerRequestService {
  constructor(private readonly probe: OverlapProbe) {}

  @DistributedLock('scoped:#id', { waitTime: 10_000 })
  async work(id: string): Promise<string> {
    await this.probe.enter(`scoped:${id}`);
    return `scoped ${id}`;
  }
}

/** Request-scoped because its dependency is: Nest creates one instance per request. */
@Controller('scoped')
class ScopedController {
  constructor(private readonly scoped: PerRequestService) {}

  @Post(':id')
  async work(@Param('id') id: string): Promise<string> {
    return this.scoped.work(id);
  }
}

@Controller('items')
class ItemController {
  constructor(private readonly probe: OverlapProbe) {}

  @Post(':id/work')
  @DistributedLock('item:#id', { waitTime: 10_000 })
  async work(@Param('id') id: string): Promise<{ id: string }> {
    await this.probe.enter(`item:${id}`);
    return { id };
  }

  @Get(':id/busy')
  @DistributedLock('item:#id', { waitTime: 100 })
  async busy(@Param('id') id: string): Promise<string> {
    return id;
  }

  @UseGuards(DenyGuard)
  @Get(':id/typed')
  @HttpCode(203)
  @DistributedLock('typed:#id', { waitTime: 1_000 })
  @UseInterceptors(MarkInterceptor)
  async typed(@Param('id', ParseIntPipe) id: number): Promise<{ id: number; type: string }> {
    return { id, type: typeof id };
  }

  @Get(':id/missing')
  @DistributedLock('item:#id')
  async missing(@Param('id') id: string): Promise<never> {
    throw new NotFoundException(`no item ${id}`);
  }

  /** A body whose wait for `stock:<id>` closed a cycle (the error built by hand, as the engine builds it). */
  @Get(':id/transfer')
  @DistributedLock('item:#id')
  async transfer(@Param('id') id: string): Promise<never> {
    throw new LockDeadlockError([
      { lock: `stock:${id}`, owner: 'c0ffee:2', instance: { host: 'api-1', pid: 4242 } },
      { lock: `item:${id}`, owner: 'beef:1' },
    ]);
  }
}

describe('@DistributedLock', () => {
  let redis: TestRedis;
  let raw: Redis;
  const probe = new OverlapProbe();
  let first: INestApplication;
  let second: INestApplication;

  async function createApp(): Promise<INestApplication> {
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: redis.url })],
      controllers: [ItemController, ScopedController],
      providers: [{ provide: OverlapProbe, useValue: probe }, ItemService, OrderService, ModeService, DenyGuard, PerRequestService],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    return app;
  }

  /** Resolves once `count` module instances have a waiter subscribed to the lock's channel. */
  // Each application's waiters of a lock listen on the lock's channel plus its client id.
  const waitersSubscribed = (lockKey: string, count: number) =>
    waitUntil(async () => ((await raw.pubsub('CHANNELS', `${lockKey}:channel:*`)) as string[]).length === count);

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    first = await createApp();
    second = await createApp();
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
    await redis?.stop();
  });
  beforeEach(() => probe.reset());

  describe('on a service', () => {
    it('never overlaps calls with the same key, in one application or across two', async () => {
      const calls = [first.get(ItemService).work('1')];
      await waitUntil(() => probe.entered.length === 1);
      calls.push(first.get(ItemService).work('1'), second.get(ItemService).work('1'));
      await waitersSubscribed('lock:{item:1}', 2); // one waiter in each application
      for (let i = 0; i < 3; i++) {
        await waitUntil(() => probe.entered.length === i + 1);
        expect(probe.inside('item:1')).toBe(1);
        probe.leave(i);
      }
      expect(await Promise.all(calls)).toEqual(['worked 1', 'worked 1', 'worked 1']);
      expect(probe.maxInside('item:1')).toBe(1);
      await released(raw, 'lock:{item:1}');
    });

    it('overlaps calls with different keys', async () => {
      const calls = [first.get(ItemService).work('a'), second.get(ItemService).work('b'), first.get(ItemService).work('c')];
      await waitUntil(() => probe.entered.length === 3); // all three inside at once
      probe.entered.forEach((_, i) => probe.leave(i));
      await Promise.all(calls);
    });

    it('re-enters on nested same-key calls, directly and through another provider', async () => {
      expect(await first.get(ItemService).nested('n1')).toEqual([1, 2]);
      expect(await first.get(OrderService).order('n2')).toEqual([2, 3]);
      await released(raw, 'lock:{item:n1}', 'lock:{item:n2}');
    });

    it('passes the method error through untouched and releases the lock', async () => {
      const error = await first.get(ItemService).fails('e1').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NotFoundException);
      expect((error as Error).message).toBe('no item e1');
      await released(raw, 'lock:{item:e1}');
      expect(await second.get(ItemService).quick('e1')).toBe('e1');
    });

    it('throws LockTimeoutError naming the lock when it is busy past waitTime, without running the body', async () => {
      const holder = second.get(LockService).getLock('item:t1');
      await holder.lock();
      try {
        const error = await first.get(ItemService).quick('t1').catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LockTimeoutError);
        expect((error as LockTimeoutError).lockName).toBe('item:t1');
      } finally {
        await holder.unlock();
      }
    });

    it('keeps name, length and the metadata of decorators above and below it', () => {
      const method = ItemService.prototype.decorated;
      expect(method.name).toBe('decorated');
      expect(method.length).toBe(2);
      expect(Reflect.getMetadata('below', method)).toBe('kept');
      expect(Reflect.getMetadata('above', method)).toBe('kept');
      expect(Reflect.getMetadata('design:paramtypes', ItemService.prototype, 'decorated')).toEqual([String, Number]);
    });

    it('refuses to run on an instance no LockModule knows, without running the body', async () => {
      const stray = new ItemService(probe, first.get(LockService));
      await expect(stray.work('x')).rejects.toThrow('ItemService.work is decorated with @DistributedLock but its instance is not known');
      expect(probe.entered).toHaveLength(0);
    });
  });

  it('after its application closed, a decorated method fails with LockShutdownError and does not run', async () => {
    const closed = await createApp();
    const items = closed.get(ItemService);
    await closed.close();
    await expect(items.work('closed')).rejects.toBeInstanceOf(LockShutdownError);
    expect(probe.entered).toHaveLength(0);
  });

  describe('on a controller', () => {
    const post = (app: INestApplication, path: string) => request(app.getHttpServer()).post(path).then((res) => res);

    it('never overlaps requests with the same key, and overlaps different keys', async () => {
      const calls = [post(first, '/items/h1/work')];
      await waitUntil(() => probe.entered.length === 1);
      calls.push(post(first, '/items/h1/work'), post(second, '/items/h1/work'));
      await waitersSubscribed('lock:{item:h1}', 2);
      const other = post(second, '/items/h2/work');
      await waitUntil(() => probe.inside('item:h2') === 1); // a different key runs alongside
      expect(probe.inside('item:h1')).toBe(1);
      probe.entered.filter((entry) => entry.key === 'item:h2').forEach((entry) => entry.leave());
      for (let released = 0; released < 3; released++) {
        await waitUntil(() => probe.entered.filter((entry) => entry.key === 'item:h1').length === released + 1);
        expect(probe.inside('item:h1')).toBe(1);
        probe.entered.filter((entry) => entry.key === 'item:h1')[released].leave();
      }
      const responses = await Promise.all([...calls, other]);
      expect(responses.map((res) => res.status)).toEqual([201, 201, 201, 201]);
      expect(responses[0].body).toEqual({ id: 'h1' });
      expect(probe.maxInside('item:h1')).toBe(1);
    });

    it('answers 423 Locked with a JSON body naming the lock when it stays busy past waitTime', async () => {
      const holder = second.get(LockService).getLock('item:busy1');
      await holder.lock();
      try {
        const res = await request(first.getHttpServer()).get('/items/busy1/busy');
        expect(res.status).toBe(423);
        expect(res.body).toEqual({
          statusCode: 423,
          error: 'Locked',
          message: expect.stringContaining('"item:busy1"'),
          lockName: 'item:busy1',
          waitTime: 100,
        });
      } finally {
        await holder.unlock();
      }
      expect((await request(first.getHttpServer()).get('/items/busy1/busy')).text).toBe('busy1');
    });

    it('answers 409 Conflict with a JSON body naming the cycle\'s locks when a wait is refused as a deadlock', async () => {
      const res = await request(first.getHttpServer()).get('/items/d1/transfer');
      expect(res.status).toBe(409);
      expect(res.body).toEqual({
        statusCode: 409,
        error: 'Conflict',
        message: expect.stringMatching(/^Deadlock: this call chain waits for "stock:d1" \(held by owner c0ffee:2 on api-1:4242\)/),
        lockName: ['stock:d1', 'item:d1'],
      });
      await released(raw, 'lock:{item:d1}');
    });

    it('keeps pipes, guards, interceptors and other route metadata working', async () => {
      const server = first.getHttpServer();
      const ok = await request(server).get('/items/42/typed');
      expect(ok.status).toBe(203);
      expect(ok.body).toEqual({ id: 42, type: 'number' });
      expect(ok.headers['x-intercepted']).toBe('yes');
      expect((await request(server).get('/items/abc/typed')).status).toBe(400); // ParseIntPipe
      expect((await request(server).get('/items/42/typed').set('x-deny', '1')).status).toBe(403); // DenyGuard
      await released(raw, 'lock:{typed:42}', 'lock:{typed:abc}');
    });

    it('lets an HTTP exception thrown inside answer as usual (404) and releases the lock', async () => {
      const res = await request(first.getHttpServer()).get('/items/m1/missing');
      expect(res.status).toBe(404);
      expect(res.body.message).toBe('no item m1');
      await released(raw, 'lock:{item:m1}');
    });

    it('locks methods of request-scoped providers (one instance per request)', async () => {
      const calls = [post(first, '/scoped/r1')];
      await waitUntil(() => probe.entered.length === 1);
      calls.push(post(second, '/scoped/r1'));
      await waitersSubscribed('lock:{scoped:r1}', 1);
      expect(probe.inside('scoped:r1')).toBe(1);
      probe.leave(0);
      await waitUntil(() => probe.entered.length === 2);
      probe.leave(1);
      expect((await Promise.all(calls)).map((res) => res.text)).toEqual(['scoped r1', 'scoped r1']);
      expect(probe.maxInside('scoped:r1')).toBe(1);
    });
  });

  describe('modes', () => {
    it('@ReadLock lets readers overlap and @WriteLock waits for them, on the read-write lock', async () => {
      const modes = first.get(ModeService);
      const readers = [modes.read('d1'), second.get(ModeService).read('d1')];
      await waitUntil(() => probe.inside('doc:d1') === 2); // two readers at once
      expect(await raw.exists('lock:rw:{doc:d1}')).toBe(1);
      const writer = modes.write('d1');
      await waitersSubscribed('lock:rw:{doc:d1}', 1);
      expect(probe.entered).toHaveLength(2);
      probe.leave(0);
      probe.leave(1);
      await waitUntil(() => probe.entered.length === 3);
      expect(probe.inside('doc:d1')).toBe(1);
      probe.leave(2);
      await Promise.all([...readers, writer]);
    });

    it('@FairLock excludes on the plain lock key of the name', async () => {
      const calls = [first.get(ModeService).fair('f1')];
      await waitUntil(() => probe.entered.length === 1);
      expect(await raw.exists('lock:{queue:f1}')).toBe(1);
      calls.push(second.get(ModeService).fair('f1'));
      await waitUntil(async () => (await raw.llen('lock:{queue:f1}:line')) === 1); // waiting in line
      expect(probe.inside('queue:f1')).toBe(1);
      probe.leave(0);
      await waitUntil(() => probe.entered.length === 2);
      probe.leave(1);
      await Promise.all(calls);
      expect(probe.maxInside('queue:f1')).toBe(1);
    });
  });
});
