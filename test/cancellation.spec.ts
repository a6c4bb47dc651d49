import { Controller, Get, INestApplication, Param } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test, TestingModule } from '@nestjs/testing';
import http from 'node:http';
import Redis from 'ioredis';
import { FairLock, FairLockService, LockModule, LockService, ReadWriteLockService } from '../lib';
import { LockEngine } from '../lib/engine/lock-engine';
import { createLockApp, waitersQueued, waitUntil } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';

const numsub = async (raw: Redis, channel: string): Promise<number> => Number((await raw.pubsub('NUMSUB', channel))[1]);

/** Rejects with the reason, and how long after the abort it took. */
async function abortAndTime(promise: Promise<unknown>, controller: AbortController, reason: unknown): Promise<{ error: unknown; ms: number }> {
  const settled = promise.then(
    () => ({ error: undefined, at: performance.now() }),
    (error: unknown) => ({ error, at: performance.now() }),
  );
  const abortedAt = performance.now();
  controller.abort(reason);
  const { error, at } = await settled;
  return { error, ms: at - abortedAt };
}

describe('cancelling a wait with an AbortSignal', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;
  let other: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url, redlock: { clients: [redis.url] } });
    other = await createLockApp({ redis: redis.url });
  });

  afterAll(async () => {
    await app?.close();
    await other?.close();
    await redis?.stop();
  });

  it('tryLock({ waitTime, signal }): rejects at once with the reason, no waiter or subscription left', async () => {
    const holder = other.get(LockService).getLock('cancel:a');
    await holder.lock();
    const controller = new AbortController();
    const waiting = app.get(LockService).getLock('cancel:a').tryLock({ waitTime: 60_000, signal: controller.signal });
    await waitersQueued(app, 1);
    expect(await numsub(raw, 'lock:{cancel:a}:channel')).toBe(1);
    const reason = new Error('user cancelled');
    const { error, ms } = await abortAndTime(waiting, controller, reason);
    expect(error).toBe(reason);
    expect(ms).toBeLessThan(500);
    const subscriber = app.get(LockEngine).subscriber;
    expect(subscriber.waiterCount()).toBe(0);
    await waitUntil(async () => (await numsub(raw, 'lock:{cancel:a}:channel')) === 0);
    expect(subscriber.channelCount).toBe(0);
    // The lock is still the holder's, and a new waiter gets it when released.
    const next = app.get(LockService).getLock('cancel:a').tryLock({ waitTime: 10_000 });
    await holder.unlock();
    await expect(next).resolves.toBe(true);
  });

  it('lock({ signal }) on a fair lock: leaves the line at once', async () => {
    const holder = other.get(FairLockService).getLock('cancel:fair');
    await holder.lock();
    const controller = new AbortController();
    const waiting = app.get(FairLockService).getLock('cancel:fair').lock({ signal: controller.signal });
    await waitUntil(async () => (await raw.llen('lock:{cancel:fair}:line')) === 1);
    const { error, ms } = await abortAndTime(waiting, controller, 'gone');
    expect(error).toBe('gone');
    expect(ms).toBeLessThan(500);
    // The live waiters (the line list keeps a left entry's tombstone until it reaches the head).
    await waitUntil(async () => (await raw.zcard('lock:{cancel:fair}:deadlines')) === 0);
    expect(await raw.zcard('lock:{cancel:fair}:deadlines')).toBe(0);
    await waitUntil(async () => ((await raw.pubsub('CHANNELS', 'lock:{cancel:fair}*')) as string[]).length === 0);
    expect(app.get(LockEngine).subscriber.channelCount).toBe(0);
    await holder.unlock();
  });

  it('run(..., { signal }) and runWrite: fn never runs; an already aborted signal rejects without asking Redis', async () => {
    const holder = other.get(ReadWriteLockService).getReadWriteLock('cancel:rw').readLock();
    await holder.lock();
    const controller = new AbortController();
    let ran = false;
    const waiting = app.get(ReadWriteLockService).runWrite('cancel:rw', () => (ran = true), { waitTime: 60_000, signal: controller.signal });
    await waitersQueued(app, 1);
    const { error } = await abortAndTime(waiting, controller, new Error('stop'));
    expect((error as Error).message).toBe('stop');
    expect(ran).toBe(false);
    await expect(app.get(LockService).run('cancel:free', () => (ran = true), { signal: AbortSignal.abort('early') })).rejects.toBe('early');
    expect(ran).toBe(false);
    expect(await raw.exists('lock:{cancel:free}')).toBe(0);
    await holder.unlock();
  });

  it('a multi-lock releases the members it took; a RedLock stops retrying', async () => {
    const holder = other.get(LockService).getLock('cancel:m2');
    await holder.lock();
    const controller = new AbortController();
    const waiting = app.get(LockService).run(['cancel:m1', 'cancel:m2'], () => 'ran', { waitTime: 60_000, signal: controller.signal });
    await waitersQueued(app, 1);
    expect(await raw.exists('lock:{cancel:m1}')).toBe(1);
    const { error, ms } = await abortAndTime(waiting, controller, 'multi');
    expect(error).toBe('multi');
    expect(ms).toBeLessThan(500);
    await waitUntil(async () => (await raw.exists('lock:{cancel:m1}')) === 0);
    await holder.unlock();

    const red = app.get(LockService).getRedLock('cancel:red');
    const redHolder = app.get(LockService).getRedLock('cancel:red');
    await redHolder.lock();
    const redController = new AbortController();
    const redWaiting = red.tryLock({ waitTime: 60_000, signal: redController.signal });
    const redResult = await abortAndTime(redWaiting, redController, 'red');
    expect(redResult.error).toBe('red');
    expect(redResult.ms).toBeLessThan(500);
    expect(red.getFencingToken()).toBeUndefined();
    await redHolder.unlock();
  });
});

@Controller('slow')
class SlowController {
  static served: string[] = [];

  @Get(':id/:who')
  @FairLock('http:#id', { waitTime: 30_000 })
  async get(@Param('id') id: string, @Param('who') who: string) {
    SlowController.served.push(who);
    return { id, who };
  }
}

/** A GET that the test can abandon (destroy its socket) before the answer. */
function openRequest(base: string, path: string): { done: Promise<{ status: number; body: string }>; abandon: () => void } {
  const req = http.get(`${base}${path}`);
  const done = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
  done.catch(() => undefined);
  return { done, abandon: () => req.destroy() };
}

describe.each([
  ['Express', () => undefined],
  ['Fastify', () => new FastifyAdapter()],
])('a decorated route stops waiting when the client disconnects (%s)', (_platform, adapter) => {
  let redis: TestRedis;
  let raw: Redis;
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: redis.url })],
      controllers: [SlowController],
    }).compile();
    const httpAdapter = adapter();
    app = httpAdapter ? moduleRef.createNestApplication(httpAdapter, { logger: false }) : moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  });

  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('frees its place in the fair line: the next client gets the lock first', async () => {
    SlowController.served = [];
    const engine = app.get(LockEngine);
    const lock = app.get(FairLockService).getLock('http:1');
    await lock.lock();
    // The live waiters (the line list keeps a left entry's tombstone until it reaches the head).
    const waiting = () => raw.zcard('lock:{http:1}:deadlines');
    const gone = openRequest(base, '/slow/1/gone');
    await waitUntil(async () => (await waiting()) === 1);
    gone.abandon();
    await waitUntil(async () => (await waiting()) === 0);
    expect(engine.subscriber.waiterCount()).toBe(0);

    const stays = openRequest(base, '/slow/1/stays');
    await waitUntil(async () => (await waiting()) === 1);
    await lock.unlock();
    const answer = await stays.done;
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ id: '1', who: 'stays' });
    expect(SlowController.served).toEqual(['stays']);
    await waitUntil(() => engine.subscriber.channelCount === 0);
  });
});
