import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockService, ReadWriteLockService, SemaphoreService } from '../lib';
import { keysWithTtl } from './support/key-audit';
import { createLockApp } from './support/lock-app';
import { startRedis, type TestRedis } from './support/redis-server';
import { waitFor } from './support/wait-for';

/** docs/architecture.md#what-a-name-leaves-behind: the longest anything of a released name lives. */
const RELEASE_RECORD_MS = 10_000;
const FENCE_MARGIN_MS = 1_000;
/** Slack for a loaded machine on top of the documented times (expiry is Redis's, checked lazily + 10 Hz). */
const SLACK_MS = 3_000;

const strictlyIncreasing = (tokens: number[]): boolean => tokens.every((token, i) => i === 0 || token > tokens[i - 1]);

type Kind = 'reentrant' | 'fair' | 'write' | 'read' | 'semaphore';

/**
 * What a name leaves behind after its release is small and short-lived, its fence included: the fence
 * key lives only until the server clock passes the last token (plus a 1 s margin), not an hour, and
 * tokens stay strictly increasing across rapid loops and after the fence is gone. Before, every
 * distinct name kept its fence key for an hour.
 */
describe('what a released name leaves behind', () => {
  let redis: TestRedis;
  let raw: Redis;
  let app: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    app = await createLockApp({ redis: redis.url });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  /** Runs one locked call of `kind` on `name` and answers its fencing token (none for a read). */
  function runOnce(kind: Kind, name: string): Promise<number | undefined> {
    const body = async ({ fencingToken }: { fencingToken?: number }) => fencingToken;
    switch (kind) {
      case 'reentrant':
        return app.get(LockService).run(name, body);
      case 'fair':
        return app.get(FairLockService).run(name, body);
      case 'write':
        return app.get(ReadWriteLockService).runWrite(name, body);
      case 'read':
        return app.get(ReadWriteLockService).runRead(name, body);
      case 'semaphore':
        return app.get(SemaphoreService).run(name, body, { permits: 2 });
    }
  }

  /** Every key of `name` (a name's keys all carry it in their hash tag) with its PTTL. */
  const keysOf = async (name: string) => (await keysWithTtl(raw)).filter(({ key }) => key.includes(`{${name}}`));

  it('every kind: right after a release only the release record (10 s) and the fence (~1 s) remain; then nothing', async () => {
    const kinds: Kind[] = ['reentrant', 'fair', 'write', 'read', 'semaphore'];
    const names = kinds.map((kind) => `left-${kind}`);
    await Promise.all(kinds.map((kind, i) => runOnce(kind, names[i])));
    const releasedAt = performance.now();
    for (const name of names) {
      for (const { key, pttl } of await keysOf(name)) {
        expect({ key, expires: pttl > 0 }).toEqual({ key, expires: true });
        const bound = key.endsWith(':fence') ? FENCE_MARGIN_MS : RELEASE_RECORD_MS;
        expect({ key, within: pttl <= bound }).toEqual({ key, within: true });
      }
    }
    // The fence first, about a second after the last acquisition.
    await waitFor(async () => (await Promise.all(names.map(keysOf))).flat().every(({ key }) => !key.endsWith(':fence')), {
      what: 'the fence keys to expire',
      timeoutMs: FENCE_MARGIN_MS + SLACK_MS,
    });
    // Then the release records: the name leaves nothing behind.
    await waitFor(async () => (await Promise.all(names.map(keysOf))).flat().length === 0, {
      what: 'every key of the released names to expire',
      timeoutMs: RELEASE_RECORD_MS + SLACK_MS,
    });
    expect(performance.now() - releasedAt).toBeLessThan(RELEASE_RECORD_MS + SLACK_MS);
  }, 30_000);

  it.each(['reentrant', 'write', 'semaphore'] as const)(
    '%s: tokens strictly increase across a rapid acquire/release loop and after the fence expired',
    async (kind) => {
      const name = `loop-${kind}`;
      const tokens: number[] = [];
      for (let i = 0; i < 200; i++) tokens.push((await runOnce(kind, name)) as number);
      await waitFor(async () => (await keysOf(name)).every(({ key }) => !key.endsWith(':fence')), {
        what: 'the fence key to expire',
        timeoutMs: FENCE_MARGIN_MS + SLACK_MS,
      });
      tokens.push((await runOnce(kind, name)) as number);
      expect(tokens.every(Number.isSafeInteger)).toBe(true);
      expect(strictlyIncreasing(tokens)).toBe(true);
    },
    30_000,
  );

  it('a fence ahead of the clock (tokens raised past it) is kept until the clock passes it, then tokens go on from the clock', async () => {
    const name = 'ahead';
    const fenceKey = `lock:{${name}}:fence`;
    const [seconds, micros] = (await raw.time()) as [string | number, string | number];
    const aheadMs = 2_000;
    const ahead = Number(seconds) * 1_000_000 + Number(micros) + aheadMs * 1_000; // a burst, or a clock that stepped back
    await raw.set(fenceKey, String(ahead));
    const tokens: number[] = [];
    for (let i = 0; i < 5; i++) tokens.push((await runOnce('reentrant', name)) as number);
    expect(tokens).toEqual([1, 2, 3, 4, 5].map((n) => ahead + n));
    // Kept while the clock has not passed the last token, and not much longer.
    const pttl = await raw.pttl(fenceKey);
    expect(pttl).toBeGreaterThan(aheadMs - SLACK_MS);
    expect(pttl).toBeLessThanOrEqual(aheadMs + FENCE_MARGIN_MS + 1);
    await waitFor(async () => (await raw.exists(fenceKey)) === 0, { what: 'the fence key to expire', timeoutMs: aheadMs + FENCE_MARGIN_MS + SLACK_MS });
    const next = (await runOnce('reentrant', name)) as number;
    expect(next).toBeGreaterThan(tokens[4]);
  }, 30_000);
});
