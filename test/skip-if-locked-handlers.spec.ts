import { Controller, INestApplication, Injectable, Param, Post, Type } from '@nestjs/common';
import { Args, Mutation, Resolver, ResolveField } from '@nestjs/graphql';
import { EventPattern, MessagePattern } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import type Redis from 'ioredis';
import request from 'supertest';
import { DistributedLock, DistributedSemaphore, LockModule, LockService } from '../lib';
import { LockEngine } from '../lib/engine/lock-engine';
import { startRedis, TestRedis } from './support/redis-server';

/**
 * `skipIfLocked` where a caller waits for the answer (issue 43, point 2): on an HTTP route it would
 * answer 201 with an empty body for work never done, so it is refused at bootstrap, naming the
 * method and the fix (`waitTime: 0`, whose busy lock answers 423 at once). Where no caller waits
 * (a provider method run by @Cron, an @EventPattern handler) it stays what it is for.
 */
describe('skipIfLocked on a handler whose caller waits for the answer', () => {
  let redis: TestRedis;
  let raw: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  const connections = async () => String(await raw.client('LIST')).trim().split('\n').length;

  /** Bootstraps an HTTP application with `classes` as controllers or providers; resolves with the bootstrap error, if any. */
  async function bootstrap(classes: { controllers?: Type<unknown>[]; providers?: Type<unknown>[] }): Promise<Error | undefined> {
    const before = await connections();
    const moduleRef = await Test.createTestingModule({ imports: [LockModule.forRoot({ redis: redis.url })], ...classes }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    try {
      await app.init();
      return undefined;
    } catch (error) {
      expect(moduleRef.get(LockEngine).client.status).toBe('wait'); // refused before any connection opened
      expect(await connections()).toBe(before);
      return error as Error;
    } finally {
      await app.close().catch(() => undefined);
    }
  }

  const fix = 'Drop skipIfLocked and give { waitTime: 0 }: a busy lock then answers what a busy lock answers (LockTimeoutError: 423 Locked over HTTP';

  it('an HTTP route is refused at bootstrap, naming class, method and the fix, whichever decorator comes first', async () => {
    @Controller('orders')
    class LockBelowRoute {
      @Post(':id/payment')
      @DistributedLock('order:#id', { skipIfLocked: true })
      async pay(@Param('id') id: string): Promise<string> {
        return `paid ${id}`;
      }
    }
    @Controller('refunds')
    class LockAboveRoute {
      @DistributedLock('refund:#id', { skipIfLocked: true })
      @Post(':id')
      async refund(@Param('id') id: string): Promise<string> {
        return `refunded ${id}`;
      }
    }
    const below = await bootstrap({ controllers: [LockBelowRoute] });
    expect(below?.message).toContain('@DistributedLock on LockBelowRoute.pay: skipIfLocked on an HTTP route is refused.');
    expect(below?.message).toContain('(201 and no body on a POST)');
    expect(below?.message).toContain(fix);
    expect((await bootstrap({ controllers: [LockAboveRoute] }))?.message).toContain('@DistributedLock on LockAboveRoute.refund: skipIfLocked on an HTTP route is refused.');
  });

  it('@DistributedSemaphore with skipIfLocked on a route is refused the same way', async () => {
    @Controller('exports')
    class ExportsController {
      @Post(':id')
      @DistributedSemaphore('export:#id', { permits: 2, skipIfLocked: true })
      async start(@Param('id') id: string): Promise<string> {
        return id;
      }
    }
    const error = await bootstrap({ controllers: [ExportsController] });
    expect(error?.message).toContain('@DistributedSemaphore on ExportsController.start: skipIfLocked on an HTTP route is refused. When the permits are taken');
    expect(error?.message).toContain('a busy semaphore then answers what a busy lock answers');
  });

  it('an RPC @MessagePattern handler and GraphQL @Mutation / @ResolveField resolvers are refused; an @EventPattern handler is not', async () => {
    @Controller()
    class RpcController {
      @MessagePattern('charge')
      @DistributedLock('charge:#id', { skipIfLocked: true })
      async charge(id: string): Promise<string> {
        return id;
      }
    }
    @Controller()
    class EventsController {
      @EventPattern('order.created')
      @DistributedLock('created:#id', { skipIfLocked: true })
      async created(id: string): Promise<void> {}
    }
    @Resolver()
    class OrdersResolver {
      @Mutation(() => String)
      @DistributedLock('pay:#id', { skipIfLocked: true })
      async pay(@Args('id') id: string): Promise<string> {
        return id;
      }
    }
    @Resolver()
    class FieldResolver {
      @ResolveField(() => String)
      @DistributedLock('total:#id', { skipIfLocked: true })
      async total(@Args('id') id: string): Promise<string> {
        return id;
      }
    }
    expect((await bootstrap({ controllers: [RpcController] }))?.message).toContain('RpcController.charge: skipIfLocked on an RPC @MessagePattern handler is refused');
    expect((await bootstrap({ providers: [OrdersResolver] }))?.message).toContain('OrdersResolver.pay: skipIfLocked on a GraphQL @Mutation resolver is refused');
    expect((await bootstrap({ providers: [FieldResolver] }))?.message).toContain('FieldResolver.total: skipIfLocked on a GraphQL @ResolveField resolver is refused');
    expect(await bootstrap({ controllers: [EventsController] })).toBeUndefined();
  });

  it('a provider method (what @Cron runs) keeps skipIfLocked, and a route locked like the fix says answers 423 at once while busy', async () => {
    @Injectable()
    class Jobs {
      @DistributedLock('nightly', { skipIfLocked: true })
      async nightly(): Promise<string> {
        return 'ran';
      }
    }
    @Controller('orders')
    class OrdersController {
      @Post(':id/payment')
      @DistributedLock('order:#id', { waitTime: 0 })
      async pay(@Param('id') id: string): Promise<string> {
        return `paid ${id}`;
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: redis.url })],
      controllers: [OrdersController],
      providers: [Jobs],
    }).compile();
    const app: INestApplication = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const elsewhere = await Test.createTestingModule({ imports: [LockModule.forRoot({ redis: redis.url })] }).compile();
    await elsewhere.init();
    try {
      const held = elsewhere.get(LockService).getLock('order:7');
      const nightly = elsewhere.get(LockService).getLock('nightly');
      expect(await held.tryLock({ waitTime: 0 })).toBe(true);
      expect(await nightly.tryLock({ waitTime: 0 })).toBe(true);
      const started = performance.now();
      const busy = await request(app.getHttpServer()).post('/orders/7/payment').expect(423);
      expect(performance.now() - started).toBeLessThan(1_000); // no wait: the default would be 5 s
      expect(busy.body).toMatchObject({ statusCode: 423, error: 'Locked', lockName: 'order:7' });
      expect(await app.get(Jobs).nightly()).toBeUndefined(); // skipped, as a cron tick should be
      await held.unlock();
      await nightly.unlock();
      await request(app.getHttpServer()).post('/orders/7/payment').expect(201, 'paid 7');
      expect(await app.get(Jobs).nightly()).toBe('ran');
    } finally {
      await app.close();
      await elsewhere.close();
    }
  });
});
