import { Controller, Get, INestApplication } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { LockModule, LockService } from '../lib';
import { LockEngine } from '../lib/engine/lock-engine';
import { LockHealthIndicator } from '../lib/terminus';
import { waitUntil } from './support/lock-app';
import { startRedis, TestRedis } from './support/redis-server';
import { freePort } from './support/local-redis';
import { spawn, ChildProcess } from 'node:child_process';
import { waitForPing } from './support/local-redis';
import { redisServerBin } from './support/redis-binaries';

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly locks: LockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.locks.isHealthy()]);
  }
}

/** A redis-server on a fixed port that the test stops and starts again. */
function startServer(port: number): Promise<ChildProcess> {
  const child = spawn(redisServerBin(), ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  return waitForPing(`redis://127.0.0.1:${port}`, 10_000).then(() => child);
}

function stopServer(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  return exited;
}

describe('LockHealthIndicator (@nestjs/terminus)', () => {
  let port: number;
  let server: ChildProcess;
  let app: INestApplication;

  beforeAll(async () => {
    port = await freePort();
    server = await startServer(port);
    const moduleRef = await Test.createTestingModule({
      imports: [
        TerminusModule.forRoot({ logger: false }),
        LockModule.forRoot({ redis: `redis://127.0.0.1:${port}`, commandTimeout: 300, watchdogTimeout: 600 }),
      ],
      controllers: [HealthController],
      providers: [LockHealthIndicator],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });

  afterAll(async () => {
    await app?.close();
    if (server && server.exitCode === null) await stopServer(server);
  });

  it('is up with the PING time, the subscriber state and the watchdog round age', async () => {
    await app.get(LockService).run('health:a', () => undefined);
    await waitUntil(async () => (await app.get(LockHealthIndicator).isHealthy()).locks.watchdogRoundAgeMs !== null, 5_000);
    const result = await app.get(LockHealthIndicator).isHealthy();
    expect(result.locks.status).toBe('up');
    expect(result.locks.pingMs).toBeGreaterThanOrEqual(0);
    expect(typeof result.locks.subscriber).toBe('string');
    expect(result.locks.watchdogRoundAgeMs).toBeLessThan(5_000);
    const response = await request(app.getHttpServer()).get('/health').expect(200);
    expect(response.body.info.locks).toMatchObject({ status: 'up' });
    expect(await app.get(LockHealthIndicator).isHealthy('redis-locks')).toHaveProperty('redis-locks.status', 'up');
  });

  it('is down, without throwing, while redis-server is stopped, and up again once it is back', async () => {
    await stopServer(server);
    const down = await app.get(LockHealthIndicator).isHealthy();
    expect(down.locks.status).toBe('down');
    expect(down.locks.message).toMatch(/PING/);
    const response = await request(app.getHttpServer()).get('/health').expect(503);
    expect(response.body.error.locks).toMatchObject({ status: 'down' });

    server = await startServer(port);
    await waitUntil(async () => (await app.get(LockHealthIndicator).isHealthy()).locks.status === 'up', 15_000, 50);
  });

  it('is down when lock renewals failed for longer than a lease, even once PING answers again', async () => {
    const lock = app.get(LockService).getLock('health:renewal');
    await lock.lock();
    await stopServer(server);
    const { watchdog } = app.get(LockEngine);
    // Renewals keep failing: the lock is lost once its lease (600 ms) is over, and the failing streak
    // outlasts a lease.
    await waitUntil(() => lock.getFencingToken() === undefined, 10_000, 50);
    await waitUntil(() => watchdog.failingSince !== undefined && Date.now() - watchdog.failingSince > 600, 10_000, 50);
    // Freeze the rounds so that the next one (which would end the streak) cannot run before we look,
    // and let a round already in flight fail first: its heartbeat, answered after the restart, would
    // end the streak too (seen on ioredis 6).
    watchdog.stop();
    await watchdog.settle();
    server = await startServer(port);
    // The command connection reconnects on its own schedule: wait until PING answers through it.
    const { client } = app.get(LockEngine);
    await waitUntil(async () => (await client.ping().catch(() => undefined)) === 'PONG', 15_000, 50);
    const result = await app.get(LockHealthIndicator).isHealthy();
    expect(result.locks.status).toBe('down');
    expect(result.locks.pingMs).toBeGreaterThanOrEqual(0);
    expect(result.locks.message).toMatch(/renewals have failed/);
  });
});
