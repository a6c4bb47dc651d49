import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Test } from '@nestjs/testing';
import { LockError, LockModule, LockService } from '../lib';
import { parseServerInfo, versionRefusal } from '../lib/redis/server-version';
import { LockEngine } from '../lib/engine/lock-engine';
import { createLockApp, waitUntil } from './support/lock-app';
import { freePort, waitForPing } from './support/local-redis';
import { startRedisCluster, TestRedisCluster } from './support/redis-cluster';

/**
 * The prebuilt servers beside the repository (`../shared/servers`, see `.ci/run`), or
 * `REDIS_SERVERS_DIR`: a clone without them skips the tests on real old servers.
 */
const SERVERS_DIR = process.env.REDIS_SERVERS_DIR || join(__dirname, '..', '..', 'shared', 'servers');
const REDIS_6_0 = join(SERVERS_DIR, 'redis-6.0.20', 'redis-server');
const REDIS_6_2 = join(SERVERS_DIR, 'redis-6.2.16', 'redis-server');

function onServer(binary: string): typeof describe {
  if (existsSync(binary)) return describe;
  process.stderr.write(`server-version.spec: ${binary} is missing; its tests are skipped\n`);
  return describe.skip;
}

interface Server {
  readonly url: string;
  stop(): Promise<void>;
}

async function startServer(binary: string, port?: number): Promise<Server> {
  const listen = port ?? (await freePort());
  const child: ChildProcess = spawn(binary, ['--port', String(listen), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `redis://127.0.0.1:${listen}`;
  await waitForPing(url);
  return {
    url,
    async stop() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

describe('server version: reading INFO server', () => {
  it('reads Redis, Valkey (its own version, not the redis_version it reports) and a RESP3 verbatim reply', () => {
    expect(parseServerInfo('# Server\r\nredis_version:6.0.20\r\nredis_mode:standalone\r\n')).toEqual({ name: 'Redis', version: '6.0.20' });
    expect(parseServerInfo('# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n')).toEqual({ name: 'Valkey', version: '8.0.1' });
    expect(parseServerInfo('txt:# Server\r\nredis_version:7.9.224\r\n')).toEqual({ name: 'Redis', version: '7.9.224' });
    expect(parseServerInfo('# Server\r\n')).toBeUndefined();
  });

  it('refuses Redis below 6.2, Redis below 7.0 on a cluster, Valkey below 7.2; names the version found and the one needed', () => {
    const at = '127.0.0.1:6379';
    expect(versionRefusal({ name: 'Redis', version: '6.0.20' }, at, false)).toBe(
      'The Redis server at 127.0.0.1:6379 is Redis 6.0.20; nestjs-redis-locks needs Redis 6.2 or newer (its scripts use SET ... GET). ' +
        'Locks are refused on this server',
    );
    expect(versionRefusal({ name: 'Redis', version: '5.0.14' }, at, false)).toContain('needs Redis 6.2 or newer');
    expect(versionRefusal({ name: 'Redis', version: '6.2.0' }, at, false)).toBeUndefined();
    expect(versionRefusal({ name: 'Redis', version: '10.0.0' }, at, false)).toBeUndefined();
    expect(versionRefusal({ name: 'Redis', version: '6.2.16' }, at, true)).toContain('is Redis 6.2.16; nestjs-redis-locks needs Redis 7.0 or newer (on a cluster');
    expect(versionRefusal({ name: 'Redis', version: '7.0.0' }, at, true)).toBeUndefined();
    expect(versionRefusal({ name: 'Valkey', version: '7.1.9' }, at, true)).toContain('needs Valkey 7.2 or newer');
    expect(versionRefusal({ name: 'Valkey', version: '7.2.4' }, at, true)).toBeUndefined();
  });
});

onServer(REDIS_6_0)('server version: Redis 6.0 (too old)', () => {
  it('fails the module start, naming the version found and the one needed', async () => {
    const server = await startServer(REDIS_6_0);
    try {
      const moduleRef = await Test.createTestingModule({ imports: [LockModule.forRoot({ redis: server.url })] }).compile();
      moduleRef.useLogger(false);
      await expect(moduleRef.init()).rejects.toThrow(/is Redis 6\.0\.20; nestjs-redis-locks needs Redis 6\.2 or newer \(its scripts use SET \.\.\. GET\)/);
      // The engine closed its connections before failing; close() rethrows the failed start.
      await moduleRef.close().catch(() => undefined);
    } finally {
      await server.stop();
    }
  });

  it('started while the server was unreachable: refuses acquisitions with that message once it connects', async () => {
    const port = await freePort();
    const moduleRef = await createLockApp({ redis: `redis://127.0.0.1:${port}`, commandTimeout: 500 });
    const server = await startServer(REDIS_6_0, port);
    try {
      const engine = moduleRef.get(LockEngine);
      await waitUntil(() => engine.serverVersion.refusal !== undefined);
      let ran = false;
      const outcome = moduleRef.get(LockService).run('too-old', () => {
        ran = true;
      });
      await expect(outcome).rejects.toBeInstanceOf(LockError);
      await expect(outcome).rejects.toThrow(/is Redis 6\.0\.20; nestjs-redis-locks needs Redis 6\.2 or newer/);
      expect(ran).toBe(false);
    } finally {
      await moduleRef.close();
      await server.stop();
    }
  });
});

/** A cluster of `binary` (the topology helpers take the server from REDIS_SERVER_BIN). */
async function startClusterOf(binary: string): Promise<TestRedisCluster> {
  const previous = process.env.REDIS_SERVER_BIN;
  process.env.REDIS_SERVER_BIN = binary;
  try {
    return await startRedisCluster(3);
  } finally {
    if (previous === undefined) delete process.env.REDIS_SERVER_BIN;
    else process.env.REDIS_SERVER_BIN = previous;
  }
}

onServer(REDIS_6_2)('server version: Redis 6.2 (the oldest supported)', () => {
  it('refuses a Redis 6.2 cluster at module start: no sharded pub/sub', async () => {
    const cluster = await startClusterOf(REDIS_6_2);
    try {
      const moduleRef = await Test.createTestingModule({ imports: [LockModule.forRoot({ redis: cluster.cluster() })] }).compile();
      moduleRef.useLogger(false);
      await expect(moduleRef.init()).rejects.toThrow(
        /is Redis 6\.2\.16; nestjs-redis-locks needs Redis 7\.0 or newer \(on a cluster it uses sharded pub\/sub, SSUBSCRIBE\/SPUBLISH\)/,
      );
      await moduleRef.close().catch(() => undefined);
    } finally {
      await cluster.stop();
    }
  });


  it('starts the module and runs a lock', async () => {
    const server = await startServer(REDIS_6_2);
    const moduleRef = await createLockApp({ redis: server.url });
    try {
      expect(moduleRef.get(LockEngine).serverVersion.refusal).toBeUndefined();
      expect(await moduleRef.get(LockService).run('oldest-supported', () => 'ran')).toBe('ran');
    } finally {
      await moduleRef.close();
      await server.stop();
    }
  });
});
