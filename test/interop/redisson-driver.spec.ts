import Redis from 'ioredis';
import { clusterUnsupportedReason, redisServerBin } from '../support/redis-binaries';
import { shardSubscribers, startRedisCluster, TestRedisCluster } from '../support/redis-cluster';
import { startRedisBinary, TestRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';
import { buildRedissonDriver, RedissonCommandError, RedissonProcess, redissonVersionsUnderTest } from './redisson';

/**
 * Proves the interop harness itself: a real Java Redisson (test/interop/redisson-driver), driven
 * from Node, behaves as Redisson does on a Redis server of this suite's own. Nothing of the library
 * runs here yet; the `layout: 'redisson'` specs will stand on this harness (DESIGN §21).
 *
 * Opt-in: INTEROP=1 (it builds a jar per Redisson version with Maven and starts JVMs). Versions:
 * REDISSON_VERSION=3.52.0,4.7.0 (the default: the newest 3.x and 4.x on Maven Central).
 */

const enabled = process.env.INTEROP === '1';
const versions = redissonVersionsUnderTest();
const WATCHDOG_MS = 3_000;

if (!enabled) process.stderr.write('redisson-driver.spec: skipped (set INTEROP=1 to drive a real Java Redisson)\n');
const describeInterop = enabled ? describe : describe.skip;
const title = enabled ? 'Redisson %s driven from Node' : 'Redisson %s driven from Node [skipped: set INTEROP=1 to run]';

jest.setTimeout(60_000);

describeInterop.each(versions)(title, (version) => {
  let redis: TestRedis;
  let client: Redis;
  let a: RedissonProcess;
  let b: RedissonProcess;
  let n = 0;
  /** A fresh name per test: the suites of both versions share nothing. */
  const fresh = (what: string): string => `interop:${version}:${what}:${++n}`;

  /** Resolves once `count` clients listen on `channel` (the Java waiter subscribes before it re-tries). */
  const subscribers = (channel: string, count = 1): Promise<void> =>
    waitFor(async () => Number(((await client.call('PUBSUB', 'NUMSUB', channel)) as [string, number])[1]) >= count, {
      what: `${count} subscriber(s) on ${channel}`,
    });

  beforeAll(async () => {
    buildRedissonDriver(version); // Maven: dependencies from Maven Central the first time
    redis = await startRedisBinary(redisServerBin());
    client = redis.client();
    [a, b] = await Promise.all([
      RedissonProcess.start({ version, address: redis.url, watchdogMs: WATCHDOG_MS }),
      RedissonProcess.start({ version, address: redis.url, watchdogMs: WATCHDOG_MS }),
    ]);
  }, 600_000);

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await redis?.stop();
  });

  it('runs the version it was built for, one client id per JVM', () => {
    expect(a.version).toBe(version);
    expect(a.clientId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(b.clientId).not.toBe(a.clientId);
  });

  it('two JVMs exclude each other on one RLock; the owner field is <clientId>:<threadId>; only the owning thread unlocks', async () => {
    const name = fresh('rlock');
    const a1 = a.holder('a1');
    const b1 = b.holder('b1');
    await a1.lock(name);
    const owner = await a1.owner();
    expect(owner).toBe(`${a.clientId}:${await a1.threadId()}`);
    expect(await client.hgetall(name)).toEqual({ [owner]: '1' });
    const pttl = await client.pttl(name);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(WATCHDOG_MS); // no lease: the watchdog's

    expect(await b1.tryLock(name, 0)).toBe(false);
    expect(await a.holder('a2').tryLock(name, 0)).toBe(false); // another thread of the same JVM too
    await a1.lock(name); // re-entry
    expect(await a1.holdCount(name)).toBe(2);
    expect(await client.hget(name, owner)).toBe('2');

    const refused = b1.unlock(name);
    await expect(refused).rejects.toBeInstanceOf(RedissonCommandError);
    await expect(refused).rejects.toMatchObject({ javaClass: 'IllegalMonitorStateException' });

    await a1.unlock(name);
    expect(await b1.tryLock(name, 0)).toBe(false);
    await a1.unlock(name);
    expect(await client.exists(name)).toBe(0);
    expect(await b1.tryLock(name, 0)).toBe(true);
    expect(await a1.isLocked(name)).toBe(true);
    await b1.unlock(name);
    expect(await a1.isLocked(name)).toBe(false);
  });

  it('the lost-update probe counts every increment when two JVMs take the lock around it', async () => {
    const name = fresh('probe-lock');
    const counter = fresh('probe-counter');
    const rounds = 8;
    const holders = [a.holder('p1'), a.holder('p2'), b.holder('p1'), b.holder('p2')];
    await Promise.all(
      holders.map(async (holder) => {
        for (let i = 0; i < rounds; i++) {
          await holder.lock(name);
          await holder.incr(counter, 2);
          await holder.unlock(name);
        }
      }),
    );
    expect(await client.get(counter)).toBe(String(holders.length * rounds));
  });

  it('the lost-update probe does lose updates when nothing excludes (the control for the test above)', async () => {
    const counter = fresh('probe-control');
    const holders = [a.holder('p1'), a.holder('p2'), b.holder('p1'), b.holder('p2')];
    await Promise.all(
      holders.map(async (holder) => {
        for (let i = 0; i < 3; i++) await holder.incr(counter, 30);
      }),
    );
    expect(Number(await client.get(counter))).toBeLessThan(holders.length * 3);
  });

  it("a Java waiter in another JVM is woken by a Java release at once, not at the lease's end", async () => {
    const name = fresh('wake');
    const holder = a.holder('w1');
    const waiter = b.holder('w1');
    await holder.lock(name, { leaseMs: 30_000 });
    const messages: string[] = [];
    const listener = client.duplicate();
    await listener.subscribe(`redisson_lock__channel:{${name}}`);
    listener.on('message', (_channel: string, message: string) => messages.push(message));

    let acquiredAt = 0;
    const waiting = waiter.lock(name, { leaseMs: 30_000, timeoutMs: 40_000 }).then(() => (acquiredAt = Date.now()));
    await subscribers(`redisson_lock__channel:{${name}}`, 2); // the Java waiter and ours
    expect(acquiredAt).toBe(0);
    const releasedAt = Date.now();
    await holder.unlock(name);
    await waiting;
    expect(acquiredAt - releasedAt).toBeLessThan(2_000);
    expect(await client.hgetall(name)).toEqual({ [await waiter.owner()]: '1' });
    await waiter.unlock(name);
    await waitFor(() => messages.length >= 2, { what: 'both unlock messages' });
    expect(messages).toEqual(['0', '0']);
    listener.disconnect();
  });

  it('tryLock(wait) in Java gives up after its wait while another JVM holds the lock', async () => {
    const name = fresh('trylock');
    await a.holder('t1').lock(name);
    const started = Date.now();
    expect(await b.holder('t1').tryLock(name, 500)).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
    await a.holder('t1').unlock(name);
  });

  it('a fair lock grants its Java waiters in the order they queued, across JVMs', async () => {
    const name = fresh('fair');
    const queue = `redisson_lock_queue:{${name}}`;
    const first = a.holder('f0');
    await first.fairLock(name);
    const waiters = [b.holder('f1'), a.holder('f2'), b.holder('f3'), a.holder('f4')];
    const owners = await Promise.all(waiters.map((w) => w.owner()));
    const granted: string[] = [];
    const done: Promise<void>[] = [];
    for (const [i, waiter] of waiters.entries()) {
      done.push(
        waiter.fairLock(name, { timeoutMs: 30_000 }).then(async () => {
          granted.push(`${waiter.jvm === a ? 'a' : 'b'}:${waiter.name}`);
          await waiter.fairUnlock(name);
        }),
      );
      await waitFor(async () => (await client.llen(queue)) === i + 1, { what: `${waiter.name} to join the fair queue` });
    }
    expect(await client.lrange(queue, 0, -1)).toEqual(owners);
    const deadlines = await client.zrange(`redisson_lock_timeout:{${name}}`, 0, -1);
    expect(deadlines).toEqual(owners); // scores grow in queue order
    await first.fairUnlock(name);
    await Promise.all(done);
    expect(granted).toEqual(['b:f1', 'a:f2', 'b:f3', 'a:f4']);
    expect(await client.exists(name, queue, `redisson_lock_timeout:{${name}}`)).toBe(0);
  });

  it('a semaphore hands out its permits across JVMs and a release wakes a Java waiter', async () => {
    const name = fresh('sem');
    const channel = `redisson_sc:{${name}}`;
    expect(await a.holder('s1').semTrySetPermits(name, 2)).toBe(true);
    expect(await b.holder('s1').semTrySetPermits(name, 5)).toBe(false);
    expect(await client.get(name)).toBe('2');
    await a.holder('s1').semAcquire(name);
    await b.holder('s1').semAcquire(name);
    expect(await client.get(name)).toBe('0');
    expect(await b.holder('s2').semTryAcquire(name, 1, 0)).toBe(false);

    let acquired = false;
    const waiting = b.holder('s3').semAcquire(name, 1, { timeoutMs: 20_000 }).then(() => (acquired = true));
    await subscribers(channel);
    expect(acquired).toBe(false);
    await a.holder('s1').semRelease(name); // any thread, any JVM may release: permits have no owner
    await waiting;
    expect(await client.get(name)).toBe('0');
    await a.holder('s9').semRelease(name, 2);
    expect(await a.holder('s9').semAvailable(name)).toBe(2);
  });

  it('a read-write lock: readers of two JVMs share, a writer waits for both and then excludes readers', async () => {
    const name = fresh('rw');
    const r1 = a.holder('r1');
    const r2 = b.holder('r2');
    const w = b.holder('w');
    await r1.readLock(name);
    await r2.readLock(name);
    const [o1, o2, ow] = await Promise.all([r1.owner(), r2.owner(), w.owner()]);
    expect(await client.hgetall(name)).toEqual({ mode: 'read', [o1]: '1', [o2]: '1' });
    expect(await client.pttl(`{${name}}:${o1}:rwlock_timeout:1`)).toBeGreaterThan(0);
    expect(await a.holder('w2').writeTryLock(name, 0)).toBe(false);

    let written = false;
    const writing = w.writeLock(name, { timeoutMs: 20_000 }).then(() => (written = true));
    await subscribers(`redisson_rwlock:{${name}}`);
    await r1.readUnlock(name);
    expect(written).toBe(false);
    await r2.readUnlock(name);
    await writing;
    expect(await client.hgetall(name)).toEqual({ mode: 'write', [`${ow}:write`]: '1' });
    expect(await a.holder('r3').readTryLock(name, 0)).toBe(false);
    await w.writeUnlock(name);
    expect(await a.holder('r3').readTryLock(name, 0)).toBe(true);
    await a.holder('r3').readUnlock(name);
    expect(await client.exists(name)).toBe(0);
  });

  it('a fenced lock hands out a token that grows with every acquire, across JVMs; the token key has no TTL', async () => {
    const name = fresh('fenced');
    const tokenKey = `redisson_lock_token:{${name}}`;
    const t1 = await a.holder('x1').fencedLock(name);
    expect(await b.holder('x1').fencedTryLock(name, 0)).toBeNull();
    await a.holder('x1').fencedUnlock(name);
    const t2 = await b.holder('x1').fencedLock(name);
    expect(t2).toBeGreaterThan(t1);
    expect(await client.get(tokenKey)).toBe(String(t2));
    expect(await client.pttl(tokenKey)).toBe(-1);
    expect(await a.holder('x9').fencedToken(name)).toBe(t2);
    await b.holder('x1').fencedUnlock(name);
  });

  it("a killed JVM's lock is renewed while it lives and frees within the watchdog timeout once it is gone", async () => {
    const name = fresh('killed');
    const doomed = await RedissonProcess.start({ version, address: redis.url, watchdogMs: WATCHDOG_MS });
    try {
      await doomed.holder('k1').lock(name); // watchdog lease: 3 s, renewed every 1 s
      const lockedAt = Date.now();
      // Renewal: the lock outlives its first lease while the JVM lives.
      await waitFor(() => Date.now() - lockedAt > WATCHDOG_MS + 1_000, { what: 'one lease to pass' });
      expect(await client.exists(name)).toBe(1);

      let acquiredAt = 0;
      const waiting = b.holder('k1').lock(name, { timeoutMs: 20_000 }).then(() => (acquiredAt = Date.now()));
      await subscribers(`redisson_lock__channel:{${name}}`);
      const pttl = await client.pttl(name);
      const killedAt = Date.now();
      await doomed.kill();
      await waiting;
      const freedAfter = acquiredAt - killedAt;
      expect(freedAfter).toBeGreaterThanOrEqual(pttl - 300); // nobody released it: it expired
      expect(freedAfter).toBeLessThan(WATCHDOG_MS + 1_500);
      await b.holder('k1').unlock(name);
    } finally {
      await doomed.kill();
    }
  });
});

/**
 * The same driver in Redisson's cluster mode on a 3-master Redis Cluster: with the default
 * `shardedSubscriptionMode` AUTO on Redis 7+, Java waits on SSUBSCRIBE and wakes on SPUBLISH.
 */
const clusterSkip = enabled ? clusterUnsupportedReason() : undefined;
const describeCluster = enabled && !clusterSkip ? describe : describe.skip;
const clusterTitle = enabled
  ? clusterSkip
    ? `Redisson %s on a Redis Cluster [${clusterSkip}]`
    : 'Redisson %s on a Redis Cluster'
  : 'Redisson %s on a Redis Cluster [skipped: set INTEROP=1 to run]';

describeCluster.each(versions)(clusterTitle, (version) => {
  let cluster: TestRedisCluster;
  let a: RedissonProcess;
  let b: RedissonProcess;
  let n = 0;
  const fresh = (what: string): string => `interop:${version}:cluster-${what}:${++n}`;

  beforeAll(async () => {
    buildRedissonDriver(version);
    cluster = await startRedisCluster(3);
    const nodes = cluster.masters.map((m) => m.url);
    [a, b] = await Promise.all([
      RedissonProcess.start({ version, cluster: nodes, watchdogMs: WATCHDOG_MS }),
      RedissonProcess.start({ version, cluster: nodes, watchdogMs: WATCHDOG_MS }),
    ]);
  }, 600_000);

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await cluster?.stop();
  });

  it('a Java waiter waits on a sharded subscription on the lock\'s master and is woken at once by the release', async () => {
    const name = fresh('wake');
    const channel = `redisson_lock__channel:{${name}}`;
    const master = await cluster.masterOf(name);
    await a.holder('w1').lock(name, { leaseMs: 30_000 });
    expect(await b.holder('w2').tryLock(name, 0)).toBe(false);
    let acquiredAt = 0;
    const waiting = b.holder('w1').lock(name, { leaseMs: 30_000, timeoutMs: 40_000 }).then(() => (acquiredAt = Date.now()));
    await waitFor(async () => (await shardSubscribers(master, channel)) >= 1, { what: `a sharded subscriber on ${channel}` });
    const plain = master.client();
    expect(((await plain.call('PUBSUB', 'NUMSUB', channel)) as [string, number])[1]).toBe(0);
    plain.disconnect();
    const releasedAt = Date.now();
    await a.holder('w1').unlock(name);
    await waiting;
    expect(acquiredAt - releasedAt).toBeLessThan(2_000);
    await b.holder('w1').unlock(name);
  });

  it('fair order, read/write and a semaphore wake work in cluster mode too', async () => {
    const fair = fresh('fair');
    await a.holder('f0').fairLock(fair);
    const order: string[] = [];
    const waiters = [b.holder('f1'), a.holder('f2')];
    const done: Promise<void>[] = [];
    for (const [i, waiter] of waiters.entries()) {
      done.push(
        waiter.fairLock(fair, { timeoutMs: 30_000 }).then(async () => {
          order.push(waiter.name);
          await waiter.fairUnlock(fair);
        }),
      );
      const master = await cluster.masterOf(fair);
      const client = master.client();
      await waitFor(async () => (await client.llen(`redisson_lock_queue:{${fair}}`)) === i + 1, { what: `${waiter.name} queued` });
      client.disconnect();
    }
    await a.holder('f0').fairUnlock(fair);
    await Promise.all(done);
    expect(order).toEqual(['f1', 'f2']);

    const rw = fresh('rw');
    await a.holder('r1').readLock(rw);
    const writing = b.holder('w').writeLock(rw, { timeoutMs: 20_000 });
    await waitFor(async () => (await shardSubscribers(await cluster.masterOf(rw), `redisson_rwlock:{${rw}}`)) >= 1, { what: 'the writer to wait' });
    await a.holder('r1').readUnlock(rw);
    await writing;
    await b.holder('w').writeUnlock(rw);

    const sem = fresh('sem');
    expect(await a.holder('s').semTrySetPermits(sem, 1)).toBe(true);
    await a.holder('s').semAcquire(sem);
    const acquiring = b.holder('s').semAcquire(sem, 1, { timeoutMs: 20_000 });
    await waitFor(async () => (await shardSubscribers(await cluster.masterOf(sem), `redisson_sc:{${sem}}`)) >= 1, { what: 'the semaphore waiter' });
    await a.holder('s').semRelease(sem);
    await acquiring;
  });
});
