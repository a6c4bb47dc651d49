import { hostname } from 'node:os';
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService } from '../lib';
import { LockEngine } from '../lib/engine/lock-engine';
import { waitUntil } from './support/lock-app';
import { ENGINES, type ContractEngine, type EngineHandle } from './support/lock-contract';

const INDEX = 'lock.instances';

/**
 * The index of live instances (`lock.instances`, kept by the watchdog's heartbeat): listed without a
 * SCAN, bounded per call, expired members dropped on the way. On Redis and on the testing kit.
 */
describe.each(ENGINES())('liveInstances() ($name)', (engine: ContractEngine) => {
  let redis: EngineHandle;
  let app: TestingModule;
  let raw: Redis;

  beforeAll(async () => {
    redis = await engine.start();
    // A long watchdog: the lister's own heartbeat (which also drops expired members) stays out of
    // the counts below; the instances whose heartbeat a test watches have a short one.
    app = await redis.createApp({ redis: redis.url, clientName: 'lister', watchdogTimeout: 60_000 });
    raw = redis.client();
  });
  afterAll(async () => {
    raw?.disconnect();
    await app?.close();
    await redis?.stop();
  });

  const serverNow = async (): Promise<number> => {
    const [seconds, micros] = await raw.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };
  const clientIdOf = (moduleRef: TestingModule) => moduleRef.get(LockEngine).ids.clientId;
  const listedIds = async (count?: number) => (await app.get(LockService).liveInstances({ count })).instances.map((i) => i.clientId);

  it('lists every live instance with its identity and aliveUntil on the server\'s clock; one that shuts down leaves at once', async () => {
    const other = await redis.createApp({ redis: redis.url, clientName: 'worker', watchdogTimeout: 600 });
    const otherId = clientIdOf(other);
    await waitUntil(async () => (await listedIds()).includes(otherId));
    const asked = await serverNow();
    const live = await app.get(LockService).liveInstances();
    expect(live.more).toBe(false);
    expect(live.serverTime).toBeGreaterThanOrEqual(asked);
    expect(live.instances.map((i) => i.clientId).sort()).toEqual([clientIdOf(app), otherId].sort());
    const worker = live.instances.find((i) => i.clientId === otherId)!;
    expect(worker).toMatchObject({ clientName: 'worker', host: hostname(), pid: process.pid });
    expect(worker.aliveUntil).toBeGreaterThan(live.serverTime);
    expect(worker.aliveUntil).toBeLessThanOrEqual(live.serverTime + 600);

    // The heartbeat moves it on (a watchdog round every 200 ms).
    const aliveUntilOf = async () => (await app.get(LockService).liveInstances()).instances.find((i) => i.clientId === otherId)?.aliveUntil ?? 0;
    await waitUntil(async () => (await aliveUntilOf()) > worker.aliveUntil, 2_000);

    await other.close();
    expect(await raw.zscore(INDEX, otherId)).toBeNull();
    expect(await listedIds()).toEqual([clientIdOf(app)]);
  });

  it('an instance whose heartbeat stopped drops out once its time ran out, and the read that meets it removes it', async () => {
    const now = await serverNow();
    // A crashed instance: its member stays, its identity hash expired (or not: it is not alive either way).
    await raw.zadd(INDEX, now + 150, 'crashed-client');
    await raw.hset('lock.instance:{crashed-client}', 'clientId', 'crashed-client', 'clientName', 'gone', 'host', 'h', 'pid', '1', 'startedAt', 'x');
    expect(await listedIds()).toContain('crashed-client');
    // Until the server's clock passes its time (the same clock the listing reads).
    await waitUntil(async () => (await serverNow()) > now + 150, 2_000);
    expect(await listedIds()).not.toContain('crashed-client');
    expect(await raw.zscore(INDEX, 'crashed-client')).toBeNull();
    await raw.del('lock.instance:{crashed-client}');
  });

  it('bounded work per call: at most count listed (more says so), at most 100 expired members dropped per call', async () => {
    const now = await serverNow();
    const dead = Array.from({ length: 150 }, (_, i) => [now - 1_000 - i, `dead-${i}`]).flat();
    await raw.zadd(INDEX, ...(dead as [number, string]));
    for (let i = 0; i < 3; i++) {
      await raw.zadd(INDEX, now + 60_000, `alive-${i}`);
      await raw.hset(`lock.instance:{alive-${i}}`, 'clientId', `alive-${i}`, 'clientName', 'fake', 'host', 'h', 'pid', String(i), 'startedAt', 'x');
    }
    const first = await app.get(LockService).liveInstances({ count: 2 });
    expect(first.instances).toHaveLength(2);
    expect(first.more).toBe(true);
    // 100 of the 150 dead went with that call, the rest with the next one.
    expect(await raw.zcard(INDEX)).toBe(50 + 3 + 1);
    const all = await app.get(LockService).liveInstances({ count: 10 });
    expect(all.more).toBe(false);
    expect(all.instances.map((i) => i.clientId).sort()).toEqual(['alive-0', 'alive-1', 'alive-2', clientIdOf(app)].sort());
    expect(await raw.zcard(INDEX)).toBe(3 + 1);

    for (const count of [0, 1.5, 1_001]) {
      await expect(app.get(LockService).liveInstances({ count })).rejects.toThrow(/count must be a whole number from 1 to 1000/);
    }
    for (let i = 0; i < 3; i++) {
      await raw.zrem(INDEX, `alive-${i}`);
      await raw.del(`lock.instance:{alive-${i}}`);
    }
  });

  it('the index lives as long as its latest member: nothing is left once every instance is gone', async () => {
    await app.close();
    expect(await raw.exists(INDEX)).toBe(0);
    app = await redis.createApp({ redis: redis.url, clientName: 'lister', watchdogTimeout: 600 });
    await waitUntil(async () => (await raw.zscore(INDEX, clientIdOf(app))) !== null);
    const ttl = await raw.pttl(INDEX);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(600);
  });
});
