import { Controller, Get, INestApplication, Param } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { DistributedLock, FairLockService, LockLostError, LockModule, LockService, LockUnavailableError } from '../../lib';
import { LockEngine } from '../../lib/engine/lock-engine';
import { deferred, waitersQueued, waitUntil } from '../support/lock-app';
import { RestartableRedis } from '../support/restartable-redis';
import { CapturedLogs, createFaultApp, timed } from './fault-app';

const COMMAND_TIMEOUT = 400;

@Controller('orders')
class OrdersController {
  @DistributedLock('order:#id', { waitTime: 300 })
  @Get(':id')
  async pay(@Param('id') id: string): Promise<{ paid: string }> {
    return { paid: id };
  }
}

/**
 * Redis killed (SIGKILL) and started again, empty, on the same address: while it is down every
 * call fails fast and typed; once it is back the same module instance works again by itself.
 */
describe('faults: Redis killed and restarted on the same port', () => {
  let redis: RestartableRedis;
  let counter = 0;
  const fresh = () => `restart-${++counter}`;

  beforeEach(async () => {
    redis = await RestartableRedis.start();
  });
  afterEach(async () => {
    await redis?.dispose();
  });

  it('while Redis is down, run() rejects with LockUnavailableError (never an ioredis error), within its bound', async () => {
    const { app } = await createFaultApp({ redis: redis.url, commandTimeout: COMMAND_TIMEOUT });
    try {
      await redis.kill();
      const name = fresh();
      let ran = false;
      const outcome = await timed(app.get(LockService).run(name, async () => (ran = true), { waitTime: 500 }));
      expect(outcome.error).toBeInstanceOf(LockUnavailableError);
      expect((outcome.error as LockUnavailableError).lockName).toBe(name);
      expect(ran).toBe(false);
      expect(outcome.ms).toBeLessThan(500 + COMMAND_TIMEOUT + 1_500);
      await redis.restart();
      expect(await app.get(LockService).run(name, async () => 'ran', { waitTime: 5_000 })).toBe('ran');
    } finally {
      await app.close();
    }
  });

  it('a decorated route answers 503 with Retry-After and a JSON body naming the lock while Redis is down', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [LockModule.forRoot({ redis: redis.url, commandTimeout: COMMAND_TIMEOUT })],
      controllers: [OrdersController],
    }).compile();
    const http: INestApplication = moduleRef.createNestApplication({ logger: false });
    await http.init();
    try {
      await request(http.getHttpServer()).get('/orders/7').expect(200, { paid: '7' });
      await redis.kill();
      const started = Date.now();
      const response = await request(http.getHttpServer()).get('/orders/7');
      expect(Date.now() - started).toBeLessThan(300 + COMMAND_TIMEOUT + 2_000);
      expect(response.status).toBe(503);
      expect(response.headers['retry-after']).toBe('1');
      expect(response.body).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        message: expect.stringContaining('order:7'),
        lockName: 'order:7',
      });
      await redis.restart();
      await waitUntil(async () => (await request(http.getHttpServer()).get('/orders/7')).status === 200, 10_000, 100);
    } finally {
      await http.close();
    }
  });

  it('an app started while Redis is down starts, warns with the address and the cause, and works once Redis is up', async () => {
    await redis.kill();
    const { app, logs } = await createFaultApp({ redis: redis.url, commandTimeout: COMMAND_TIMEOUT });
    try {
      await waitUntil(() => logs.warnings.length > 0);
      expect(logs.warnings[0]).toContain(`127.0.0.1:${redis.port}`);
      expect(logs.warnings[0]).toContain(`ECONNREFUSED 127.0.0.1:${redis.port}`);
      await redis.restart();
      expect(await app.get(LockService).run(fresh(), async () => 'ran', { waitTime: 5_000 })).toBe('ran');
      // Logged once per outage, not once per reconnect attempt.
      expect(logs.warnings.filter((line) => line.includes('ECONNREFUSED'))).toHaveLength(1);
    } finally {
      await app.close();
    }
  });

  it('after a restart, waiters acquire within their waitTime and a holder whose lock vanished sees LockLostError within one watchdog round', async () => {
    const WATCHDOG = 6_000; // renewed every 2 s; a waiter that missed the restart would sleep out its TTL
    const { app, logs } = await createFaultApp({ redis: redis.url, commandTimeout: COMMAND_TIMEOUT, watchdogTimeout: WATCHDOG });
    const engine = app.get(LockEngine);
    try {
      const plain = fresh();
      const fair = fresh();
      const lost = [deferred<unknown>(), deferred<unknown>()];
      const finish = deferred();
      const holders = [
        app.get(LockService).run(plain, async ({ signal }) => {
          signal.addEventListener('abort', () => lost[0].resolve(signal.reason));
          await finish.promise;
        }),
        app.get(FairLockService).run(fair, async ({ signal }) => {
          signal.addEventListener('abort', () => lost[1].resolve(signal.reason));
          await finish.promise;
        }),
      ];
      await waitUntil(() => engine.holds.size === 2);
      const waiters = [app.get(LockService).getLock(plain), app.get(FairLockService).getLock(fair)];
      const acquired = waiters.map((lock) => lock.tryLock({ waitTime: 15_000 }).then((ok) => ({ ok, at: Date.now() })));
      await waitersQueued(app, 2);

      await redis.restart();
      const restartedAt = Date.now();
      const outcomes = await Promise.all(acquired);
      for (const { ok, at } of outcomes) {
        expect(ok).toBe(true);
        expect(at - restartedAt).toBeLessThan(WATCHDOG / 2);
      }
      const reasons = await Promise.all(lost.map((d) => d.promise));
      const lostBy = Date.now() - restartedAt;
      for (const reason of reasons) expect(reason).toBeInstanceOf(LockLostError);
      expect(lostBy).toBeLessThan(WATCHDOG / 3 + 2_000);

      finish.resolve();
      await Promise.all(holders); // their releases find nothing of theirs: logged, not thrown
      await waitUntil(() => logs.warnings.filter((line) => line.includes('already gone')).length === 2);
      for (const lock of waiters) {
        expect(await lock.getHoldCount()).toBe(1);
        await lock.unlock();
      }
      // Nothing is left held or subscribed, locally or on the new server.
      expect(engine.holds.size).toBe(0);
      await waitUntil(() => engine.subscriber.channelCount === 0);
      const raw = redis.client();
      // The last UNSUBSCRIBE may still be on its way on the subscriber's own connection; a channel
      // left subscribed (a leak) stays, and fails this bound.
      const channels = async () => (await raw.pubsub('CHANNELS')) as string[];
      await waitUntil(async () => (await channels()).length === 0, 5_000).catch(() => undefined);
      expect(await channels()).toEqual([]);
      expect((await raw.keys('lock:*')).filter((key) => !key.endsWith(':fence') && !key.includes(':rq:'))).toEqual([]);
    } finally {
      await app.close();
    }
  });
});
