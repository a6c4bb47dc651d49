import type { TestingModule } from '@nestjs/testing';
import { LockService } from '../lib';
import { LuaScript } from '../lib/redis/lua-script';
import { LockKeys } from '../lib/redis/lock-keys';
import { waitUntil } from './support/lock-app';
import { ENGINES, type ContractEngine, type EngineHandle } from './support/lock-contract';

/**
 * Script-level guarantees: resends do not change the outcome, and a flushed script cache recovers.
 * On Redis, and on the testing kit's in-memory server, which runs the same scripts.
 */
/** The reentrant acquire's keys and arguments: one attempt that never joins the line. */
const acquireKeys = (key: string): string[] => [key, ...LockKeys.lineKeys(key)];
const acquireArgs = (owner: string, requestId: string): Array<string | number> => [10_000, owner, requestId, 60_000, '', 5_000, 'publish', 'one'];
const releaseKeys = (key: string, record: string): string[] => [key, `${key}:rq:${record}`, ...LockKeys.lineKeys(key)];
const releaseArgs = (owner: string, grantedBy: string): Array<string | number> => [owner, 10_000, 'publish', 'one', grantedBy, 5_000, 60_000];

describe.each(ENGINES())('reentrant lock scripts ($name)', (engine: ContractEngine) => {
  let redis: EngineHandle;
  let app: TestingModule;
  beforeAll(async () => {
    redis = await engine.start();
    app = await redis.createApp({ redis: redis.url });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('a resent acquire (same request id) does not raise the hold count twice', async () => {
    const raw = redis.client();
    const acquire = LuaScript.named('reentrant-acquire');
    const key = 'lock:{resent-acquire}';
    const keys = acquireKeys(key);
    const [token] = (await acquire.run(raw, keys, acquireArgs('owner-1', 'r1'))) as [number];
    expect(Number.isSafeInteger(token)).toBe(true);
    expect(await acquire.run(raw, keys, acquireArgs('owner-1', 'r1'))).toEqual([token]); // the resend
    expect(await raw.hget(key, 'owner-1')).toBe('1');
    expect(await acquire.run(raw, keys, acquireArgs('owner-1', 'r2'))).toEqual([token]); // a re-entry keeps the token
    expect(await raw.hget(key, 'owner-1')).toBe('2');
    expect(Number(await acquire.run(raw, keys, acquireArgs('owner-2', 'r3')))).toBeGreaterThan(0);
  });

  it('a resent release returns its first answer instead of "not held"', async () => {
    const raw = redis.client();
    const acquire = LuaScript.named('reentrant-acquire');
    const release = LuaScript.named('reentrant-release');
    const key = 'lock:{resent-release}';
    const keys = (requestId: string) => releaseKeys(key, requestId);
    const args = releaseArgs('owner-1', '');
    await acquire.run(raw, acquireKeys(key), acquireArgs('owner-1', 'a1'));
    await acquire.run(raw, acquireKeys(key), acquireArgs('owner-1', 'a2'));
    expect(await release.run(raw, keys('x1'), args)).toBe(0);
    expect(await release.run(raw, keys('x1'), args)).toBe(0); // resend: not applied twice
    expect(await raw.hget(key, 'owner-1')).toBe('1');
    expect(await release.run(raw, keys('x2'), args)).toBe(1);
    expect(await release.run(raw, keys('x2'), args)).toBe(1); // resend after the key is gone
    expect(await release.run(raw, keys('x3'), args)).toBeNull(); // a genuinely new release
    expect(await raw.exists(key)).toBe(0);
  });

  it('a release named by its hold\'s fencing token never releases a later episode\'s hold', async () => {
    const raw = redis.client();
    const acquire = LuaScript.named('reentrant-acquire');
    const release = LuaScript.named('reentrant-release');
    const key = 'lock:{episodes}';
    const releaseOf = (record: string, token: number) => release.run(raw, releaseKeys(key, record), [...releaseArgs('owner-1', ''), String(token)]);
    const [first] = (await acquire.run(raw, acquireKeys(key), acquireArgs('owner-1', 'a1'))) as [number];
    expect(await releaseOf('x1', first)).toBe(1); // the last hold: no record read
    const [second] = (await acquire.run(raw, acquireKeys(key), acquireArgs('owner-1', 'a2'))) as [number];
    expect(second).toBeGreaterThan(first);
    expect(await releaseOf('x1', first)).toBe(1); // resent: its first answer, and the new hold stays
    expect(await raw.hget(key, 'owner-1')).toBe('1');
    await raw.del(`${key}:rq:x1`); // even once its record is gone (a resend later than the record lives)
    expect(await releaseOf('x1', first)).toBeNull();
    expect(await raw.hget(key, 'owner-1')).toBe('1');
    expect(await releaseOf('x2', second)).toBe(1);
    expect(await raw.exists(key)).toBe(0);
  });

  it('a release that left holds behind is recognised when resent after a re-entry and another release', async () => {
    const raw = redis.client();
    const acquire = LuaScript.named('reentrant-acquire');
    const release = LuaScript.named('reentrant-release');
    const key = 'lock:{partial-release}';
    const releaseOf = (record: string, token: number) => release.run(raw, releaseKeys(key, record), [...releaseArgs('owner-1', ''), String(token)]);
    const [token] = (await acquire.run(raw, acquireKeys(key), acquireArgs('owner-1', 'a1'))) as [number];
    await acquire.run(raw, acquireKeys(key), acquireArgs('owner-1', 'a2'));
    expect(await releaseOf('x1', token)).toBe(0); // 2 -> 1: its outcome recorded, the episode marked
    await acquire.run(raw, acquireKeys(key), acquireArgs('owner-1', 'a3')); // 1 -> 2
    expect(await releaseOf('x2', token)).toBe(0); // 2 -> 1
    expect(await releaseOf('x1', token)).toBe(0); // x1 resent: one hold is left, as counted here
    expect(await raw.hget(key, 'owner-1')).toBe('1');
    expect(await releaseOf('x3', token)).toBe(1);
    expect(await raw.exists(key)).toBe(0);
  });

  it('a release bound to an acquire request undoes only the hold that request granted', async () => {
    const raw = redis.client();
    const acquire = LuaScript.named('reentrant-acquire');
    const release = LuaScript.named('reentrant-release');
    const key = 'lock:{abandoned}';
    const undo = (record: string, grantedBy: string) => release.run(raw, releaseKeys(key, record), releaseArgs('owner-1', grantedBy));
    await acquire.run(raw, acquireKeys(key), acquireArgs('owner-1', 'a1'));
    expect(await undo('u1', 'a0')).toBeNull(); // a0 granted nothing: the hold of a1 stays
    expect(await raw.hget(key, 'owner-1')).toBe('1');
    await acquire.run(raw, acquireKeys(key), acquireArgs('owner-1', 'a2')); // a late re-entry
    expect(await undo('u2', 'a2')).toBe(0); // undone: back to the one hold of a1
    expect(await undo('u3', 'a2')).toBeNull(); // and only once
    expect(await raw.hget(key, 'owner-1')).toBe('1');
  });

  it('fencing tokens grow across owners, and past an expired fence key', async () => {
    const raw = redis.client();
    const acquire = LuaScript.named('reentrant-acquire');
    const key = 'lock:{fenced}';
    const tokens: number[] = [];
    for (let i = 0; i < 20; i++) {
      const [token] = (await acquire.run(raw, acquireKeys(key), acquireArgs(`owner-${i}`, 'r'))) as [number];
      tokens.push(token);
      await raw.del(key);
      if (i === 10) await raw.del(`${key}:fence`); // as if idle past the fence memory
    }
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
    expect(tokens.every(Number.isSafeInteger)).toBe(true);
    // A fence above the clock (a clock that stepped back) is still respected.
    await raw.set(`${key}:fence`, String(tokens[19] + 1_000_000_000));
    const [next] = (await acquire.run(raw, acquireKeys(key), acquireArgs('owner-x', 'r'))) as [number];
    expect(next).toBe(tokens[19] + 1_000_000_001);
  });

  it('recovers from a flushed script cache (NOSCRIPT)', async () => {
    const locks = app.get(LockService);
    await locks.run('before-flush', async () => undefined);
    await redis.client().script('FLUSH');
    expect(await locks.run('after-flush', async () => 'ran')).toBe('ran');
    // The release answered NOSCRIPT and went again as EVAL, after whatever was sent meanwhile.
    await waitUntil(async () => !(await locks.getLock('after-flush').isLocked()));
    expect(await locks.run('after-flush', async () => 'again')).toBe('again');
  });
});
