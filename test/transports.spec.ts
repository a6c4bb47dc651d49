import { ArgumentsHost, Controller, INestApplication, INestMicroservice, UseFilters } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ClientProxy, ClientProxyFactory, MessagePattern, Payload, Transport } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { WsAdapter } from '@nestjs/platform-ws';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { firstValueFrom } from 'rxjs';
import request from 'supertest';
import WebSocket from 'ws';
import {
  DistributedLock,
  LockDeadlockError,
  LockErrorFilter,
  lockErrorResponse,
  LockModule,
  LockService,
  LockTimeoutError,
  LockUnavailableError,
} from '../lib';
import { completion, spawnFixture } from './support/child-process';
import { deferred, waitUntil } from './support/lock-app';
import { freePort, startRedis, type TestRedis } from './support/redis-server';
import { startApolloApp } from './support/apollo-app';
import { ReportResolver } from './support/report-resolver';

/** Holds each report's lock until the test lets it go. */
let reportGate = deferred();

/**
 * What a body sees when its wait for `${prefix}-b:1` closed a cycle with `${prefix}-a:1` (built by
 * hand: the transports only carry the error).
 */
const deadlock = (prefix: string) =>
  new LockDeadlockError([
    { lock: `${prefix}-b:1`, owner: 'c0ffee:2', instance: { host: 'api-1', pid: 4242 } },
    { lock: `${prefix}-a:1`, owner: 'beef:1' },
  ]);

/** The message of `deadlock(prefix)`. */
const deadlockMessage = (prefix: string) =>
  `Deadlock: this call chain waits for "${prefix}-b:1" (held by owner c0ffee:2 on api-1:4242), which waits for "${prefix}-a:1" ` +
  `(held by this call chain). The wait for "${prefix}-b:1" was refused so the others can go on; ` +
  `take "${prefix}-b:1" and "${prefix}-a:1" in one order everywhere, or as one multi-lock`;

@Controller()
class ReportsController {
  @MessagePattern('report')
  @DistributedLock('report:#data.id', { waitTime: 0 })
  async report(@Payload() data: { id: string }) {
    await reportGate.promise;
    return `report ${data.id}`;
  }

  @MessagePattern('transfer')
  @DistributedLock('rpc-a:#data.id')
  async transfer(@Payload() data: { id: string }): Promise<never> {
    throw deadlock('rpc');
  }
}

// Nest never applies app-wide filters to gateways: the gateway names LockErrorFilter itself.
@WebSocketGateway()
@UseFilters(LockErrorFilter)
class ReportsGateway {
  @SubscribeMessage('report')
  @DistributedLock('ws-report:#data.id', { waitTime: 0 })
  async report(@MessageBody() data: { id: string }) {
    return { event: 'report', data: `report ${data.id}` };
  }

  @SubscribeMessage('transfer')
  @DistributedLock('ws-a:#data.id')
  async transfer(@MessageBody() data: { id: string }): Promise<never> {
    throw deadlock('ws');
  }
}

describe('lock errors outside HTTP', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    redis = await startRedis();
  });

  afterAll(async () => {
    await redis?.stop();
  });

  describe('@nestjs/microservices (TCP)', () => {
    let service: INestMicroservice;
    let client: ClientProxy;

    beforeAll(async () => {
      const port = await freePort();
      const moduleRef = await Test.createTestingModule({
        imports: [LockModule.forRoot({ redis: redis.url })],
        controllers: [ReportsController],
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

    it('of two concurrent requests for one key, one is answered, the other gets 423 with the lock name', async () => {
      reportGate = deferred();
      const first = firstValueFrom(client.send('report', { id: '7' }));
      const raw = redis.client();
      try {
        await waitUntil(async () => (await raw.exists('lock:{report:7}')) === 1);
      } finally {
        raw.disconnect();
      }
      const second = await firstValueFrom(client.send('report', { id: '7' })).catch((error: unknown) => error);
      reportGate.resolve();
      await expect(first).resolves.toBe('report 7');
      expect(second).toEqual({
        statusCode: 423,
        error: 'Locked',
        message: 'Lock "report:7" was not acquired within 0 ms',
        lockName: 'report:7',
        waitTime: 0,
      });
    });

    it('a call refused as a deadlock gets 409 Conflict with the cycle\'s lock names, and its lock is released', async () => {
      const refused = await firstValueFrom(client.send('transfer', { id: '1' })).catch((error: unknown) => error);
      expect(refused).toEqual({ statusCode: 409, error: 'Conflict', message: deadlockMessage('rpc'), lockName: ['rpc-b:1', 'rpc-a:1'] });
      const raw = redis.client();
      try {
        expect(await raw.exists('lock:{rpc-a:1}')).toBe(0);
      } finally {
        raw.disconnect();
      }
    });
  });

  describe('@nestjs/graphql with Apollo', () => {
    let app: INestApplication;

    beforeAll(async () => {
      app = await startApolloApp({ redis: redis.url }, [ReportResolver]);
    });

    afterAll(async () => {
      await app?.close();
    });

    it('a locked resolver answers a GraphQL error with extensions.code LOCKED, never INTERNAL_SERVER_ERROR', async () => {
      const holder = app.get(LockService).getLock('gql-report:9');
      await holder.lock();
      try {
        const response = await request(app.getHttpServer()).post('/graphql').send({ query: '{ report(id: "9") }' });
        expect(response.body.data).toBeNull();
        expect(response.body.errors).toHaveLength(1);
        expect(response.body.errors[0]).toMatchObject({
          message: 'Lock "gql-report:9" was not acquired within 0 ms',
          extensions: { code: 'LOCKED', statusCode: 423, lockName: 'gql-report:9' },
        });
      } finally {
        await holder.unlock();
      }
      const answered = await request(app.getHttpServer()).post('/graphql').send({ query: '{ report(id: "9") }' });
      expect(answered.body).toEqual({ data: { report: 'report 9' } });
    });

    it('a resolver refused as a deadlock answers extensions.code CONFLICT (409) with the cycle\'s lock names', async () => {
      const response = await request(app.getHttpServer()).post('/graphql').send({ query: '{ transfer(id: "1") }' });
      expect(response.body.data).toBeNull();
      expect(response.body.errors).toHaveLength(1);
      expect(response.body.errors[0]).toMatchObject({
        message: deadlockMessage('gql'),
        extensions: { code: 'CONFLICT', statusCode: 409, lockName: ['gql-b:1', 'gql-a:1'] },
      });
    });
  });

  // Mercurius loads an ESM-only package (through @fastify/static) that Jest's module loader cannot
  // require; the app runs in a child process under plain Node instead (test/fixtures/mercurius-app.ts).
  it('@nestjs/graphql with Mercurius (Fastify): a locked resolver answers a GraphQL error with extensions.code LOCKED', async () => {
    const output = await completion(spawnFixture('mercurius-app', [redis.url]));
    const { whileHeld, whenFree, deadlocked } = JSON.parse(output.trim().split('\n').pop()!);
    expect(whileHeld.errors).toHaveLength(1);
    expect(whileHeld.errors[0]).toMatchObject({
      message: 'Lock "gql-report:m" was not acquired within 0 ms',
      extensions: { code: 'LOCKED', statusCode: 423, lockName: 'gql-report:m' },
    });
    expect(whenFree).toEqual({ data: { report: 'report m' } });
    expect(deadlocked.errors).toHaveLength(1);
    expect(deadlocked.errors[0]).toMatchObject({
      message: deadlockMessage('gql'),
      extensions: { code: 'CONFLICT', statusCode: 409, lockName: ['gql-b:1', 'gql-a:1'] },
    });
  }, 60_000);

  describe('WebSocket gateway (@nestjs/platform-ws)', () => {
    let app: INestApplication;
    let url: string;

    beforeAll(async () => {
      const port = await freePort();
      const moduleRef = await Test.createTestingModule({
        imports: [LockModule.forRoot({ redis: redis.url })],
        providers: [ReportsGateway],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      app.useWebSocketAdapter(new WsAdapter(app));
      await app.listen(port, '127.0.0.1');
      url = `ws://127.0.0.1:${port}`;
    });

    afterAll(async () => {
      await app?.close();
    });

    it('a client whose message finds the lock busy receives an exception event with the HTTP body', async () => {
      const socket = new WebSocket(url);
      const messages: Array<{ event: string; data: unknown }> = [];
      socket.on('message', (message) => messages.push(JSON.parse(String(message))));
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      const holder = app.get(LockService).getLock('ws-report:1');
      await holder.lock();
      try {
        socket.send(JSON.stringify({ event: 'report', data: { id: '1' } }));
        await waitUntil(() => messages.length === 1, 10_000);
      } finally {
        await holder.unlock();
      }
      socket.send(JSON.stringify({ event: 'report', data: { id: '1' } }));
      await waitUntil(() => messages.length === 2, 10_000);
      socket.close();
      expect(messages).toEqual([
        {
          event: 'exception',
          data: { statusCode: 423, error: 'Locked', message: 'Lock "ws-report:1" was not acquired within 0 ms', lockName: 'ws-report:1', waitTime: 0 },
        },
        { event: 'report', data: 'report 1' },
      ]);
    });

    it('a message refused as a deadlock receives an exception event with the 409 body', async () => {
      const socket = new WebSocket(url);
      const messages: Array<{ event: string; data: unknown }> = [];
      socket.on('message', (message) => messages.push(JSON.parse(String(message))));
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      socket.send(JSON.stringify({ event: 'transfer', data: { id: '1' } }));
      await waitUntil(() => messages.length === 1, 10_000);
      socket.close();
      expect(messages).toEqual([
        { event: 'exception', data: { statusCode: 409, error: 'Conflict', message: deadlockMessage('ws'), lockName: ['ws-b:1', 'ws-a:1'] } },
      ]);
      expect(await app.get(LockService).getLock('ws-a:1').isLocked()).toBe(false);
    });
  });

  describe('LockErrorFilter for socket.io clients', () => {
    const wsHost = (emit: jest.Mock): ArgumentsHost =>
      ({ getType: () => 'ws', switchToWs: () => ({ getClient: () => ({ emit }) }) }) as unknown as ArgumentsHost;

    it('emits an exception event with the body an HTTP client gets', () => {
      const filter = new LockErrorFilter({} as HttpAdapterHost);
      const emit = jest.fn();
      filter.catch(new LockTimeoutError('room:1', 50), wsHost(emit));
      filter.catch(new LockUnavailableError('room:2', new Error('connect ECONNREFUSED')), wsHost(emit));
      filter.catch(deadlock('room'), wsHost(emit));
      expect(emit.mock.calls).toEqual([
        ['exception', { statusCode: 423, error: 'Locked', message: 'Lock "room:1" was not acquired within 50 ms', lockName: 'room:1', waitTime: 50 }],
        [
          'exception',
          {
            statusCode: 503,
            error: 'Service Unavailable',
            message: 'Lock "room:2" is unavailable: Redis could not be reached',
            lockName: 'room:2',
          },
        ],
        ['exception', { statusCode: 409, error: 'Conflict', message: deadlockMessage('room'), lockName: ['room-b:1', 'room-a:1'] }],
      ]);
    });
  });

  it('the error classes carry extensions for GraphQL servers', () => {
    expect(new LockTimeoutError(['a', 'b'], 10).extensions).toEqual({ code: 'LOCKED', statusCode: 423, lockName: ['a', 'b'] });
    expect(new LockUnavailableError('a', new Error('down')).extensions).toEqual({ code: 'SERVICE_UNAVAILABLE', statusCode: 503, lockName: 'a' });
    expect(deadlock('x').extensions).toEqual({ code: 'CONFLICT', statusCode: 409, lockName: ['x-b:1', 'x-a:1'] });
  });

  it('a deadlock body and its extensions cut each name to 200 characters, as for the other lock errors', () => {
    const long = `${'n'.repeat(300)}`;
    const error = new LockDeadlockError([
      { lock: long, owner: 'c0ffee:2' },
      { lock: 'short', owner: 'beef:1' },
    ]);
    expect(lockErrorResponse(error)).toEqual({
      status: 409,
      body: { statusCode: 409, error: 'Conflict', message: error.message, lockName: ['n'.repeat(200), 'short'] },
      headers: {},
    });
    expect(error.extensions.lockName).toEqual(['n'.repeat(200), 'short']);
  });
});
