import { Body, Controller, Get, INestApplication, Post, Query } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { FairLockService, InvalidLockNameError, LockModule, LockNamePatternError, LockService, ReadWriteLockService, SemaphoreService } from '../lib';
import { startRedis, type TestRedis } from './support/redis-server';

/**
 * An empty lock name (or one that is not a string) and a refused `list({ match })` pattern are the
 * caller's input the library cannot use (docs/architecture.md#keys): typed errors that say what is
 * wrong, answered 400 Bad Request by the filter (and `statusCode` / `extensions.code` for the other
 * transports), not 500. Both stay `instanceof TypeError`, as they were documented to be. Before, they
 * were plain `TypeError`s: an HTTP route doing `run('')` answered 500.
 */

@Controller()
class NamesController {
  constructor(private readonly locks: LockService) {}

  @Post('direct')
  direct(@Body() dto: { name: string }) {
    return this.locks.run(dto.name, () => ({ ran: true }), { waitTime: 0 });
  }

  @Get('locks')
  async list(@Query('match') match: string) {
    const names: string[] = [];
    for await (const info of this.locks.list({ match })) names.push(info.name);
    return names;
  }
}

/** What `act` threw or rejected with. */
async function failureOf(act: () => unknown): Promise<unknown> {
  try {
    await act();
  } catch (error) {
    return error;
  }
  throw new Error('expected a refusal');
}

/** A bad request on every transport: `statusCode` 400 and GraphQL's `extensions.code`. */
function expectBadRequest(error: unknown): void {
  expect(error).toBeInstanceOf(TypeError);
  expect(error).toMatchObject({ statusCode: 400, extensions: { code: 'BAD_REQUEST', statusCode: 400 } });
}

describe('empty lock names and refused list() patterns are bad requests', () => {
  let redis: TestRedis;
  let app: INestApplication;

  beforeAll(async () => {
    redis = await startRedis();
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: redis.url })],
      controllers: [NamesController],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });

  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('every entry point that takes a name refuses an empty one with InvalidLockNameError', async () => {
    const locks = app.get(LockService);
    const fair = app.get(FairLockService);
    const rw = app.get(ReadWriteLockService);
    const semaphores = app.get(SemaphoreService);
    const body = async () => 'ran';
    const refusals: Record<string, () => unknown> = {
      'getLock': () => locks.getLock(''),
      'run': () => locks.run('', body),
      'run([..., ""])': () => locks.run(['ok', ''], body),
      'getMultiLock member': () => locks.getMultiLock(locks.getLock('ok'), locks.getLock('')),
      'getRedLock': () => locks.getRedLock(''),
      'inspect': () => locks.inspect(''),
      'fair getLock': () => fair.getLock(''),
      'fair run': () => fair.run('', body),
      'fair inspect': () => fair.inspect(''),
      'getReadWriteLock': () => rw.getReadWriteLock(''),
      'runRead': () => rw.runRead('', body),
      'runWrite': () => rw.runWrite('', body),
      'read-write inspect': () => rw.inspect(''),
      'getSemaphore': () => semaphores.getSemaphore('', { permits: 1 }),
      'semaphore run': () => semaphores.run('', body, { permits: 1 }),
      'semaphore inspect': () => semaphores.inspect(''),
      'a name that is not a string': () => locks.getLock(undefined as unknown as string),
    };
    for (const [entry, refuse] of Object.entries(refusals)) {
      const error = await failureOf(refuse);
      expect({ entry, error }).toMatchObject({ entry, error: expect.any(InvalidLockNameError) });
      expectBadRequest(error);
      expect((error as Error).message).toMatch(/^A lock name must be a non-empty string \(got (""|undefined)\)$/);
    }
  });

  it('list() refuses an invalid or too costly pattern with LockNamePatternError, still a TypeError', async () => {
    for (const match of ['[z-a]', 'a*b*c*d*e*']) {
      const error = await failureOf(async () => {
        for await (const _ of app.get(LockService).list({ match })) void _;
      });
      expect(error).toBeInstanceOf(LockNamePatternError);
      expectBadRequest(error);
      expect((error as Error).message).toContain(`list({ match: "${match}" }) is refused`);
    }
  });

  it('an HTTP route doing run("") answers 400 saying what is wrong, not 500', async () => {
    const response = await request(app.getHttpServer()).post('/direct').send({ name: '' });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ statusCode: 400, error: 'Bad Request', message: 'A lock name must be a non-empty string (got "")' });
    const served = await request(app.getHttpServer()).post('/direct').send({ name: 'fine' });
    expect(served.body).toEqual({ ran: true });
  });

  it('an HTTP route listing with a refused pattern answers 400 saying why, not 500', async () => {
    const response = await request(app.getHttpServer()).get('/locks').query({ match: '[z-a]' });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      message: 'list({ match: "[z-a]" }) is refused: the pattern is invalid: the range [z-a] is reversed (write [a-z])',
    });
    const served = await request(app.getHttpServer()).get('/locks').query({ match: 'fine*' });
    expect(served.status).toBe(200);
  });
});
