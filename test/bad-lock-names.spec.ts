import { Body, Controller, INestApplication, INestMicroservice, Post, UseFilters } from '@nestjs/common';
import { Args, Query, Resolver } from '@nestjs/graphql';
import { ClientProxy, ClientProxyFactory, MessagePattern, Payload, Transport } from '@nestjs/microservices';
import { WsAdapter } from '@nestjs/platform-ws';
import { Test } from '@nestjs/testing';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { firstValueFrom } from 'rxjs';
import request from 'supertest';
import WebSocket from 'ws';
import {
  DistributedLock,
  FairLockService,
  KeyTemplateError,
  LockErrorFilter,
  LockModule,
  LockNameTooLongError,
  LockService,
  LockTimeoutError,
  ReadWriteLockService,
  SemaphoreService,
} from '../lib';
import { resolveLockOptions } from '../lib/lock.options';
import { LOCK_LOST, LOCK_SKIPPED, RELEASE_FAILED, RENEWAL_FAILED, SUBSCRIBE_FAILED } from '../lib/lock.messages';
import { waitUntil } from './support/lock-app';
import { startApolloApp } from './support/apollo-app';
import { freePort, startRedis, type TestRedis } from './support/redis-server';

/**
 * Names from untrusted input (docs/architecture.md#keys): a key template value the library cannot
 * use answers 400 naming the template parameter, on every transport; a name over `maxNameLength` is
 * refused with the limit and the length; messages quote at most 200 characters of a name.
 */

const MAX = 64;

@Controller()
class OrdersController {
  constructor(private readonly locks: LockService) {}

  /** A name taken straight from the request, without a template. */
  @Post('direct')
  direct(@Body() dto: { name: string }) {
    return this.locks.run(dto.name, () => ({ ran: true }), { waitTime: 0 });
  }

  @Post('orders')
  @DistributedLock('order:#dto.id', { waitTime: 0 })
  async pay(@Body() dto: { id: unknown }) {
    return { paid: dto.id };
  }

  @MessagePattern('order')
  @DistributedLock('rpc-order:#data.id', { waitTime: 0 })
  async rpc(@Payload() data: { id: unknown }) {
    return `order ${String(data.id)}`;
  }
}

@WebSocketGateway()
@UseFilters(LockErrorFilter)
class OrdersGateway {
  @SubscribeMessage('order')
  @DistributedLock('ws-order:#data.id', { waitTime: 0 })
  async order(@MessageBody() data: { id: unknown }) {
    return { event: 'order', data: `order ${String(data.id)}` };
  }
}

@Resolver()
class OrdersResolver {
  @Query(() => String)
  @DistributedLock('gql-order:#id', { waitTime: 0 })
  async order(@Args('id', { type: () => String, nullable: true }) id: string | null) {
    return `order ${id}`;
  }
}

describe('unusable names and template values', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    redis = await startRedis();
  });

  afterAll(async () => {
    await redis?.stop();
  });

  describe('HTTP', () => {
    let app: INestApplication;

    beforeAll(async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [LockModule.forRoot({ redis: redis.url, maxNameLength: MAX })],
        controllers: [OrdersController],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await app.init();
    });

    afterAll(async () => {
      await app?.close();
    });

    it.each([
      ['missing', {}, 'undefined'],
      ['null', { id: null }, 'null'],
      ['an object', { id: { nested: 1 } }, 'an object'],
      ['an empty string', { id: '' }, 'an empty string'],
    ])('a value that is %s answers 400 naming the template parameter', async (_what, body, problem) => {
      const response = await request(app.getHttpServer()).post('/orders').send(body);
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ statusCode: 400, error: 'Bad Request', parameter: '#dto.id' });
      expect(response.body.message).toContain('#dto.id');
      expect(response.body.message).toContain(problem);
    });

    it('a value making a name over maxNameLength answers 400 with the limit and the length, not the value', async () => {
      const id = 'x'.repeat(500);
      const response = await request(app.getHttpServer()).post('/orders').send({ id });
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ statusCode: 400, error: 'Bad Request', parameter: '#dto.id' });
      expect(response.body.message).toContain(`${'order:'.length + 500} characters`);
      expect(response.body.message).toContain(`${MAX}`);
      expect(response.body.message).not.toContain('xxxxxxxxxx');
    });

    it('a name over maxNameLength given to run() directly answers 400 too (LockNameTooLongError)', async () => {
      const response = await request(app.getHttpServer()).post('/direct').send({ name: 'd'.repeat(MAX + 1) });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        message: `A lock name may have at most ${MAX} characters (maxNameLength); this one has ${MAX + 1}`,
      });
      const served = await request(app.getHttpServer()).post('/direct').send({ name: 'd'.repeat(MAX) });
      expect(served.body).toEqual({ ran: true });
    });

    it('a usable value is served, and a name at the limit is accepted', async () => {
      const id = 'y'.repeat(MAX - 'order:'.length);
      const response = await request(app.getHttpServer()).post('/orders').send({ id });
      expect(response.status).toBe(201);
      expect(response.body).toEqual({ paid: id });
    });
  });

  describe('@nestjs/microservices (TCP)', () => {
    let service: INestMicroservice;
    let client: ClientProxy;

    beforeAll(async () => {
      const port = await freePort();
      const moduleRef = await Test.createTestingModule({
        imports: [LockModule.forRoot({ redis: redis.url, maxNameLength: MAX })],
        controllers: [OrdersController],
      }).compile();
      service = moduleRef.createNestMicroservice({ transport: Transport.TCP, options: { host: '127.0.0.1', port }, logger: false });
      await service.listen();
      client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
      await client.connect();
    });

    afterAll(async () => {
      client?.close();
      await service?.close();
    });

    it('an RPC caller receives the 400 body for a null or too long value', async () => {
      const nullId = await firstValueFrom(client.send('order', { id: null })).catch((error: unknown) => error);
      expect(nullId).toMatchObject({ statusCode: 400, error: 'Bad Request', parameter: '#data.id' });
      const longId = await firstValueFrom(client.send('order', { id: 'z'.repeat(1000) })).catch((error: unknown) => error);
      expect(longId).toMatchObject({ statusCode: 400, error: 'Bad Request', parameter: '#data.id' });
      await expect(firstValueFrom(client.send('order', { id: 'ok' }))).resolves.toBe('order ok');
    });
  });

  describe('WebSocket gateway (@nestjs/platform-ws)', () => {
    let app: INestApplication;
    let url: string;

    beforeAll(async () => {
      const port = await freePort();
      const moduleRef = await Test.createTestingModule({
        imports: [LockModule.forRoot({ redis: redis.url, maxNameLength: MAX })],
        providers: [OrdersGateway],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      app.useWebSocketAdapter(new WsAdapter(app));
      await app.listen(port, '127.0.0.1');
      url = `ws://127.0.0.1:${port}`;
    });

    afterAll(async () => {
      await app?.close();
    });

    it('a client sending an object value receives an exception event with the 400 body', async () => {
      const socket = new WebSocket(url);
      const messages: Array<{ event: string; data: Record<string, unknown> }> = [];
      socket.on('message', (message) => messages.push(JSON.parse(String(message))));
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      socket.send(JSON.stringify({ event: 'order', data: { id: { a: 1 } } }));
      await waitUntil(() => messages.length === 1, 10_000);
      socket.close();
      expect(messages[0].event).toBe('exception');
      expect(messages[0].data).toMatchObject({ statusCode: 400, error: 'Bad Request', parameter: '#data.id' });
    });
  });

  describe('@nestjs/graphql with Apollo', () => {
    let app: INestApplication;

    beforeAll(async () => {
      app = await startApolloApp({ redis: redis.url, maxNameLength: MAX }, [OrdersResolver]);
    });

    afterAll(async () => {
      await app?.close();
    });

    it('a missing or too long argument answers a GraphQL error with extensions.code BAD_REQUEST', async () => {
      for (const query of ['{ order }', `{ order(id: "${'q'.repeat(300)}") }`]) {
        const response = await request(app.getHttpServer()).post('/graphql').send({ query });
        expect(response.body.errors).toHaveLength(1);
        expect(response.body.errors[0].extensions).toMatchObject({ code: 'BAD_REQUEST', statusCode: 400, parameter: '#id' });
      }
      const answered = await request(app.getHttpServer()).post('/graphql').send({ query: '{ order(id: "5") }' });
      expect(answered.body).toEqual({ data: { order: 'order 5' } });
    });
  });

  describe('maxNameLength on every kind', () => {
    let app: INestApplication;

    beforeAll(async () => {
      const moduleRef = await Test.createTestingModule({ imports: [LockModule.forRoot({ redis: redis.url, maxNameLength: MAX })] }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      await app.init();
    });

    afterAll(async () => {
      await app?.close();
    });

    it('refuses a longer name before any Redis call, giving the limit and the length, never the name', async () => {
      const long = 'n'.repeat(MAX + 1);
      const refusals: Array<() => unknown> = [
        () => app.get(LockService).getLock(long),
        () => app.get(FairLockService).getLock(long),
        () => app.get(ReadWriteLockService).getReadWriteLock(long),
        () => app.get(SemaphoreService).getSemaphore(long, { permits: 1 }),
        () => app.get(LockService).run(['ok', long], async () => 1),
      ];
      for (const refuse of refusals) {
        let error: unknown;
        try {
          await refuse();
        } catch (caught) {
          error = caught;
        }
        expect(error).toBeInstanceOf(LockNameTooLongError);
        expect((error as Error).message).toBe(`A lock name may have at most ${MAX} characters (maxNameLength); this one has ${MAX + 1}`);
      }
      await expect(app.get(LockService).inspect(long)).rejects.toBeInstanceOf(LockNameTooLongError);
      // A name at the limit is a lock like any other.
      await expect(app.get(LockService).run('m'.repeat(MAX), async () => 'ran')).resolves.toBe('ran');
    });

    it('is validated at bootstrap like every option, and defaults to 1024', async () => {
      for (const bad of [0, -1, 1.5, '1024', Number.NaN]) {
        const compiling = Test.createTestingModule({ imports: [LockModule.forRoot({ redis: redis.url, maxNameLength: bad as number })] }).compile();
        await expect(compiling).rejects.toThrow(/"maxNameLength" must be a whole number >= 1/);
      }
      expect(resolveLockOptions({}).maxNameLength).toBe(1024);
    });
  });

  it('messages, bodies and GraphQL extensions quote at most the first 200 characters of a name', () => {
    const name = `${'a'.repeat(199)}Z${'b'.repeat(800)}`;
    const error = new LockTimeoutError(name, 0);
    expect(error.message).toBe(`Lock "${'a'.repeat(199)}Z"... (1000 characters) was not acquired within 0 ms`);
    expect(error.extensions.lockName).toBe(`${'a'.repeat(199)}Z`);
    expect(error.lockName).toBe(name); // the program still gets the whole name
    const multi = new LockTimeoutError([name, 'short'], 0);
    expect(multi.message).not.toContain('b');
    expect(multi.extensions.lockName).toEqual([`${'a'.repeat(199)}Z`, 'short']);
    // A newline in a name cannot start a forged log line.
    expect(new LockTimeoutError('x\nERROR fake', 0).message).toBe('Lock "x\\nERROR fake" was not acquired within 0 ms');
    expect(new KeyTemplateError('m', '#id').extensions).toEqual({ code: 'BAD_REQUEST', statusCode: 400, parameter: '#id' });
    // Log lines too (one helper quotes names everywhere).
    for (const line of [
      LOCK_LOST(name, 'renewal found it no longer held'),
      RELEASE_FAILED(name, new Error('down')),
      RENEWAL_FAILED(name, new Error('down')),
      LOCK_SKIPPED([name, name], 0),
      SUBSCRIBE_FAILED(`lock:{${name}}:channel`),
    ]) {
      expect(line).not.toContain('b'.repeat(10));
      expect(line.length).toBeLessThan(2 * 200 + 250);
    }
  });
});
