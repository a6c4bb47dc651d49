import { ArgumentsHost, Controller, Get, INestApplication, LoggerService, Param, Post } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { Args, Query, Resolver } from '@nestjs/graphql';
import { Test } from '@nestjs/testing';
import type Redis from 'ioredis';
import request from 'supertest';
import { DistributedLock, DistributedSemaphore, LockErrorFilter, LockModule, type LockModuleOptions, LockNameConflictError, LockService, LockUnavailableError } from '../lib';
import { startApolloApp } from './support/apollo-app';
import { startRedis, type TestRedis } from './support/redis-server';

/**
 * Issue 42 (DESIGN §25), both layouts: an error's HTTP, RPC, WebSocket and GraphQL body never carries
 * Redis internals (its error text, a script's hash or line, an address): the client gets the lock's
 * name and what happened in plain words. A key holding something else answers 409 Conflict, not 503.
 * The exception filter logs a 5xx answer's cause (and a conflict) with the internals, once a minute
 * per lock name, so a permanent misconfiguration shows in the server log.
 */

/** Anything of Redis's own in a body: its error words, a script's SHA or line, an address. */
const INTERNALS = /WRONGTYPE|OOM command|script:|@user_script|[0-9a-f]{40}|ECONNREFUSED|127\.0\.0\.1|ReplyError/;

@Controller()
class OrdersController {
  @Post('orders/:id/checkout')
  @DistributedLock('order:#id', { waitTime: 0 })
  async checkout(@Param('id') id: string): Promise<string> {
    return `checked out ${id}`;
  }

  @Get('by-name/:name')
  @DistributedLock((name: string) => name, { waitTime: 0 })
  async byName(@Param('name') name: string): Promise<string> {
    return `ran ${name}`;
  }

  @Post('stock/:sku')
  @DistributedSemaphore('stock:#sku', { permits: 10, take: 2, waitTime: 0 })
  async reserve(@Param('sku') sku: string): Promise<string> {
    return `reserved ${sku}`;
  }
}

@Resolver()
class OrderResolver {
  @Query(() => String)
  @DistributedLock('gql-order:#id', { waitTime: 0 })
  async order(@Args('id') id: string): Promise<string> {
    return `order ${id}`;
  }
}

/** A logger that keeps what the filter logs. */
class CapturedLog implements LoggerService {
  readonly errors: string[] = [];
  readonly warnings: string[] = [];
  log(): void {}
  error(message: unknown): void {
    this.errors.push(String(message));
  }
  warn(message: unknown): void {
    this.warnings.push(String(message));
  }
  debug(): void {}
  verbose(): void {}
  fatal(): void {}
}

const rpcHost = { getType: () => 'rpc' } as unknown as ArgumentsHost;
const wsHost = (emit: jest.Mock): ArgumentsHost => ({ getType: () => 'ws', switchToWs: () => ({ getClient: () => ({ emit }) }) }) as unknown as ArgumentsHost;
const graphqlHost = { getType: () => 'graphql' } as unknown as ArgumentsHost;

describe.each(['redisson', 'native'] as const)("layout '%s': error bodies in plain words, causes in the log", (layout) => {
  let redis: TestRedis;
  let raw: Redis;
  let app: INestApplication;
  let log: CapturedLog;
  let seq = 0;
  const options = (): LockModuleOptions => ({ redis: redis.url, layout, commandTimeout: 2_000 });
  /** The key an application value must sit at to clash with lock `name`. */
  const keyOf = (name: string) => (layout === 'redisson' ? name : `lock:{${name}}`);

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    log = new CapturedLog();
    const moduleRef = await Test.createTestingModule({ imports: [LockModule.forRoot(options())], controllers: [OrdersController] }).compile();
    app = moduleRef.createNestApplication({ logger: log });
    await app.init();
  });
  afterAll(async () => {
    await raw?.call('CONFIG', 'SET', 'maxmemory', '0').catch(() => undefined);
    await app?.close();
    await redis?.stop();
  });
  afterEach(async () => {
    await raw.call('CONFIG', 'SET', 'maxmemory', '0');
    jest.restoreAllMocks();
  });

  it('an application value at the lock answers 409 Conflict naming the lock, is logged once a minute as a warning, and stays as it was', async () => {
    const id = `500-${++seq}`;
    await raw.set(keyOf(`order:${id}`), 'cached order');
    const warningsBefore = log.warnings.length;
    const first = await request(app.getHttpServer()).post(`/orders/${id}/checkout`);
    const second = await request(app.getHttpServer()).post(`/orders/${id}/checkout`);
    for (const response of [first, second]) {
      expect(response.status).toBe(409);
      expect(response.headers['retry-after']).toBeUndefined();
      expect(response.body).toMatchObject({ statusCode: 409, error: 'Conflict', lockName: `order:${id}` });
      expect(JSON.stringify(response.body)).not.toMatch(INTERNALS);
    }
    if (layout === 'redisson') expect(first.body.message).toContain(`The key "order:${id}" holds a string, not a lock`);
    expect(await raw.get(keyOf(`order:${id}`))).toBe('cached order');
    const warnings = log.warnings.slice(warningsBefore);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`Answered 409 for lock "order:${id}"`);
    expect(warnings[0]).toMatch(layout === 'redisson' ? /LOCKNAMECONFLICT string lock/ : /WRONGTYPE/);
  });

  it('Redis answering an error: 503 in plain words (no Redis text, script hash or line); the cause is logged once a minute per lock name', async () => {
    const errorsBefore = log.errors.length;
    await raw.call('CONFIG', 'SET', 'maxmemory', '1');
    const a = `oom-a-${++seq}`;
    const b = `oom-b-${seq}`;
    const responses = [];
    for (const id of [a, a, b]) responses.push(await request(app.getHttpServer()).post(`/orders/${id}/checkout`));
    for (const [i, response] of responses.entries()) {
      const id = i < 2 ? a : b;
      expect(response.status).toBe(503);
      expect(response.headers['retry-after']).toBeDefined();
      expect(response.body).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        message: `Lock "order:${id}" is unavailable: Redis is out of memory`,
        lockName: `order:${id}`,
      });
    }
    // Logged: the internals, once per name (a twice, b once).
    let errors = log.errors.slice(errorsBefore);
    expect(errors).toHaveLength(2);
    expect(errors[0]).toContain(`Answered 503 for lock "order:${a}"`);
    expect(errors[0]).toMatch(/OOM command not allowed/);
    expect(errors[1]).toContain(`"order:${b}"`);
    // A minute later the same name's failure is logged again.
    const now = Date.now();
    jest.spyOn(Date, 'now').mockImplementation(() => now + 61_000);
    await request(app.getHttpServer()).post(`/orders/${a}/checkout`).expect(503);
    errors = log.errors.slice(errorsBefore);
    expect(errors).toHaveLength(3);
    expect(errors[2]).toContain(`"order:${a}"`);
  });

  it('the same bodies reach RPC callers, WebSocket clients and GraphQL (the error itself, with a plain message)', async () => {
    const id = `rpc-${++seq}`;
    await raw.set(keyOf(`order:${id}`), 'cached');
    const conflict = await app.get(LockService).run(`order:${id}`, async () => undefined).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(LockNameConflictError);
    await raw.call('CONFIG', 'SET', 'maxmemory', '1');
    const unavailable = await app.get(LockService).run(`order:oom-${id}`, async () => undefined, { waitTime: 0 }).catch((e: unknown) => e);
    expect(unavailable).toBeInstanceOf(LockUnavailableError);
    expect(String(((unavailable as Error).cause as Error).message)).toMatch(/OOM command not allowed/);
    const filter = new LockErrorFilter({} as HttpAdapterHost);
    for (const error of [conflict, unavailable] as Array<LockNameConflictError | LockUnavailableError>) {
      let rpcBody: unknown;
      (filter.catch(error, rpcHost) as { subscribe(o: { error(e: unknown): void }): void }).subscribe({ error: (e) => (rpcBody = e) });
      const emit = jest.fn();
      filter.catch(error, wsHost(emit));
      expect(rpcBody).toMatchObject({ statusCode: error.statusCode });
      expect(emit).toHaveBeenCalledWith('exception', rpcBody);
      expect(JSON.stringify(rpcBody)).not.toMatch(INTERNALS);
      // GraphQL servers answer the error's message and extensions.
      expect(() => filter.catch(error, graphqlHost)).toThrow(error);
      expect(error.message).not.toMatch(INTERNALS);
      expect(JSON.stringify(error.extensions)).not.toMatch(INTERNALS);
    }
  });

  if (layout === 'redisson') {
    it('a name from a key function shaped like a derived key answers 400 Bad Request, and the body never runs', async () => {
      const response = await request(app.getHttpServer()).get(`/by-name/${encodeURIComponent('redisson_lock_token:{order:1}')}`);
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
      expect(response.body.message).toContain("refused in layout 'redisson'");
      expect(await raw.exists('redisson_lock_token:{order:1}')).toBe(0);
    });

    it("a semaphore on an application counter answers 409 and the counter keeps its value (not 7 -> 5)", async () => {
      const sku = `sku-${++seq}`;
      await raw.set(`stock:${sku}`, '7');
      const response = await request(app.getHttpServer()).post(`/stock/${sku}`);
      expect(response.status).toBe(409);
      expect(response.body.message).toContain(`The key "stock:${sku}" holds a string, not a semaphore's permit counter`);
      expect(await raw.get(`stock:${sku}`)).toBe('7');
    });
  }
});

describe('GraphQL (Apollo): a conflict answers extensions.code CONFLICT with a plain message', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: INestApplication;
  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await startApolloApp({ redis: redis.url, layout: 'redisson' }, [OrderResolver]);
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('409 CONFLICT, lockName, no Redis internals', async () => {
    await raw.set('gql-order:1', 'cached');
    const response = await request(app.getHttpServer()).post('/graphql').send({ query: '{ order(id: "1") }' });
    expect(response.body.data).toBeNull();
    expect(response.body.errors[0]).toMatchObject({
      message: expect.stringContaining('The key "gql-order:1" holds a string, not a lock'),
      extensions: { code: 'CONFLICT', statusCode: 409, lockName: 'gql-order:1' },
    });
    expect(JSON.stringify(response.body)).not.toMatch(INTERNALS);
    expect(await raw.get('gql-order:1')).toBe('cached');
  });
});
