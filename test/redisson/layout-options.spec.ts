import { resolveLockOptions } from '../../lib/lock.options';
import { LockEngine } from '../../lib/engine/lock-engine';
import { LockService } from '../../lib';
import { createLockApp, waitUntil } from '../support/lock-app';
import { startRedis, type TestRedis } from '../support/redis-server';
import { describeOnCluster, startRedisCluster, type TestRedisCluster } from '../support/redis-cluster';

/**
 * `layout` and `redisson` are checked at start, each bad value named (docs/redisson-interop.md#start-up-errors),
 * and the publish mode is decided as the Java side's Redisson decides it.
 */
describe("layout 'redisson': options checked before any connection", () => {
  const resolve = (options: Record<string, unknown>) => () => resolveLockOptions(options as never);

  it('native stays the default and takes no redisson options', () => {
    expect(resolveLockOptions({}).layout).toBe('native');
    expect(resolveLockOptions({}).redisson).toBeUndefined();
    expect(resolve({ redisson: {} })).toThrow(`LockModule option "redisson" applies only with layout 'redisson' (got layout 'native')`);
  });

  it('refuses an unknown layout and unknown or bad redisson options, naming them', () => {
    expect(resolve({ layout: 'java' })).toThrow(`LockModule option "layout" must be 'native' or 'redisson' (got "java")`);
    expect(resolve({ layout: 'redisson', redisson: { sharded: 'on' } })).toThrow('LockModule option "redisson.sharded" is not a known option');
    expect(resolve({ layout: 'redisson', redisson: { shardedSubscription: 'yes' } })).toThrow(
      `LockModule option "redisson.shardedSubscription" must be 'auto', 'on' or 'off' (got "yes")`,
    );
    expect(resolve({ layout: 'redisson', redisson: { fencedLocks: 'true' } })).toThrow('LockModule option "redisson.fencedLocks" must be a boolean');
    expect(resolve({ layout: 'redisson', redisson: 'app:' })).toThrow('LockModule option "redisson" must be an object');
  });

  it('tries the name mapper at start: not a function, throwing, empty or varying fails the start', () => {
    expect(resolve({ layout: 'redisson', redisson: { nameMapper: 'app:' } })).toThrow('LockModule option "redisson.nameMapper" must be a function');
    expect(resolve({ layout: 'redisson', redisson: { nameMapper: () => { throw new Error('no tenant'); } } })).toThrow(
      'LockModule option "redisson.nameMapper" threw for the lock name "nestjs-redis-locks:probe": no tenant',
    );
    expect(resolve({ layout: 'redisson', redisson: { nameMapper: () => '' } })).toThrow('it must return a non-empty string, the same one every time');
    let calls = 0;
    expect(resolve({ layout: 'redisson', redisson: { nameMapper: (name: string) => `${name}:${++calls}` } })).toThrow(
      'returned "nestjs-redis-locks:probe:1" then "nestjs-redis-locks:probe:2"',
    );
    const mapped = resolveLockOptions({ layout: 'redisson', redisson: { nameMapper: { map: (name: string) => `app:${name}` } } });
    expect(mapped.redisson?.nameMapper('order')).toBe('app:order');
  });

  it('turns the cross-process deadlock check off, and refuses it when asked for', () => {
    const resolved = resolveLockOptions({ layout: 'redisson' });
    expect(resolved.deadlockCheckAfter).toBe(0);
    expect(resolved.redisson).toMatchObject({ shardedSubscription: 'auto', fencedLocks: false });
    expect(resolve({ layout: 'redisson', deadlockCheckAfter: 1000 })).toThrow(
      `LockModule option "deadlockCheckAfter" must be 0 or unset with layout 'redisson'`,
    );
  });
});

describe("layout 'redisson': the publish mode", () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(() => redis?.stop());

  it('outside a cluster is PUBLISH, and shardedSubscription on fails the start (Redisson shards only in cluster mode)', async () => {
    const app = await createLockApp({ redis: redis.url, layout: 'redisson' });
    expect(app.get(LockEngine).redisson?.publishCommand).toBe('PUBLISH');
    await app.close();
    await expect(createLockApp({ redis: redis.url, layout: 'redisson', redisson: { shardedSubscription: 'on' } })).rejects.toThrow(
      `LockModule option "redisson.shardedSubscription" is 'on', but the connection is not a Redis Cluster`,
    );
  });

  it('a name mapper that throws for one name refuses that call, naming the lock, and runs nothing', async () => {
    const app = await createLockApp({
      redis: redis.url,
      layout: 'redisson',
      redisson: { nameMapper: (name: string) => (name.startsWith('bad') ? (JSON.parse('{') as string) : `app:${name}`) },
    });
    const fn = jest.fn();
    await expect(app.get(LockService).run('bad-order', fn)).rejects.toThrow('lock "bad-order": redisson.nameMapper failed');
    expect(fn).not.toHaveBeenCalled();
    const raw = redis.client();
    await app.get(LockService).run('order', async () => expect(await raw.hlen('app:order')).toBe(1));
    await app.close();
  });
});

describeOnCluster("layout 'redisson' on a Redis Cluster", () => {
  let cluster: TestRedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster(3);
  });
  afterAll(() => cluster?.stop());

  it("'auto' probes every master: Redis 7 answers PUBSUB SHARDNUMSUB, so SPUBLISH, and waiters wake across modules", async () => {
    const a = await createLockApp({ redis: cluster.cluster(), layout: 'redisson' });
    const b = await createLockApp({ redis: cluster.cluster(), layout: 'redisson' });
    try {
      expect(a.get(LockEngine).redisson?.publishCommand).toBe('SPUBLISH');
      const lock = a.get(LockService).getLock('probe-auto');
      await lock.lock({ leaseTime: 30_000 });
      const started = Date.now();
      const other = b.get(LockService).getLock('probe-auto');
      const acquired = other.tryLock({ waitTime: 20_000 });
      await waitUntil(() => b.get(LockEngine).subscriber.sleepingCount() > 0);
      await lock.unlock();
      expect(await acquired).toBe(true);
      // Woken by the message, not at the 30 s TTL.
      expect(Date.now() - started).toBeLessThan(10_000);
      await other.unlock();
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("'off' uses PUBLISH and classic subscriptions on the cluster, and still wakes", async () => {
    const options = { layout: 'redisson' as const, redisson: { shardedSubscription: 'off' as const } };
    const a = await createLockApp({ redis: cluster.cluster(), ...options });
    const b = await createLockApp({ redis: cluster.cluster(), ...options });
    try {
      expect(a.get(LockEngine).redisson?.publishCommand).toBe('PUBLISH');
      const lock = a.get(LockService).getLock('probe-off');
      await lock.lock({ leaseTime: 30_000 });
      const other = b.get(LockService).getLock('probe-off');
      const started = Date.now();
      const acquired = other.tryLock({ waitTime: 20_000 });
      await waitUntil(() => b.get(LockEngine).subscriber.sleepingCount() > 0);
      await lock.unlock();
      expect(await acquired).toBe(true);
      expect(Date.now() - started).toBeLessThan(10_000);
      await other.unlock();
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("'auto' fails the start when a master cannot be asked (here: PUBSUB refused by its ACL), naming it and the way out", async () => {
    const master = cluster.masters[1];
    const admin = master.client();
    await admin.call('ACL', 'SETUSER', 'default', '-pubsub');
    try {
      await expect(createLockApp({ redis: cluster.cluster(), layout: 'redisson' })).rejects.toThrow(
        new RegExp(`could not tell whether Redisson uses sharded pub/sub \\(PUBSUB SHARDNUMSUB on 127\\.0\\.0\\.1:${master.port}: NOPERM.*Set redisson\\.shardedSubscription to 'on' or 'off'`),
      );
      // Told which one the Java side resolved, the start goes on.
      const app = await createLockApp({ redis: cluster.cluster(), layout: 'redisson', redisson: { shardedSubscription: 'on' } }).catch((error: Error) => error);
      expect(app).toBeInstanceOf(Error); // 'on' asks every master too: the one that refuses is named
      const off = await createLockApp({ redis: cluster.cluster(), layout: 'redisson', redisson: { shardedSubscription: 'off' } });
      await off.close();
    } finally {
      await admin.call('ACL', 'SETUSER', 'default', '+pubsub');
      admin.disconnect();
    }
  });

  it("a mapped name with a '{' but no hash tag is refused (Redisson's own keys of it would span slots)", async () => {
    const app = await createLockApp({ redis: cluster.cluster(), layout: 'redisson' });
    try {
      expect(() => app.get(LockService).getLock('foo{}bar')).toThrow(`maps to "foo{}bar", which has a '{' but no hash tag`);
      await app.get(LockService).run('order:{42}', async () => undefined);
    } finally {
      await app.close();
    }
  });
});

/** A Redis 6.2 cluster (no sharded pub/sub): Redisson's AUTO falls back to PUBLISH; 'on' cannot work. */
const redis62 = [`${__dirname}/../../../shared/servers/redis-6.2.16/redis-server`, `${__dirname}/../../../shared/servers/redis-6.2.16/bin/redis-server`].find((path) =>
  require('node:fs').existsSync(path),
);
(redis62 ? describe : describe.skip)("layout 'redisson' on a Redis 6.2 cluster (no sharded pub/sub)", () => {
  let cluster: TestRedisCluster;
  const previous = process.env.REDIS_SERVER_BIN;
  beforeAll(async () => {
    process.env.REDIS_SERVER_BIN = redis62;
    cluster = await startRedisCluster(3);
  });
  afterAll(async () => {
    await cluster?.stop();
    if (previous === undefined) delete process.env.REDIS_SERVER_BIN;
    else process.env.REDIS_SERVER_BIN = previous;
  });

  it("'auto' finds no sharded pub/sub on any master: PUBLISH, as Redisson decides", async () => {
    const app = await createLockApp({ redis: cluster.cluster(), layout: 'redisson' });
    try {
      expect(app.get(LockEngine).redisson?.publishCommand).toBe('PUBLISH');
    } finally {
      await app.close();
    }
  });

  it("'on' fails the start, naming a master that refused", async () => {
    await expect(createLockApp({ redis: cluster.cluster(), layout: 'redisson', redisson: { shardedSubscription: 'on' } })).rejects.toThrow(
      /redisson\.shardedSubscription 'on' needs Redis or Valkey 7\.0\+ on every master \(127\.0\.0\.1:\d+ refused PUBSUB SHARDNUMSUB/,
    );
  });
});
