import type { TestingModule } from '@nestjs/testing';
import { LockService, type LockRunContext } from '../../lib';
import { LockKeys } from '../../lib/redis/lock-keys';
import { createLockApp, deferred, releasesSettled } from '../support/lock-app';
import { startRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

/**
 * Review of issue 41 ("RedLock joins the same model"; "Every body counting on an ended hold is told,
 * even when its owner was granted the lock again meanwhile") and docs/lock-kinds (runRedLock's signal
 * aborts when a majority no longer holds it).
 *
 * Inside runRedLock(name) the hold is lost on the masters (DEL) and another instance's runRedLock
 * enters and leaves. A nested runRedLock the body starts (same owner: engine.ownerFor) asks before the
 * watchdog's next round, waits for that other holder, and is granted a *new* hold on the masters
 * (redlock-acquire.lua takes a free lock for anyone; another fencing token), which RedLock.held counts
 * as a re-entry of the outer body's record. The outer body, inside while the other instance held the
 * lock, is never told: its signal stays live, and the watchdog keeps renewing the new hold for it.
 * The native lock in the same scenario tells the outer body (control).
 * Fixed: a RedLock re-entry re-arms only (redlock-acquire.lua ARGV[4]); a majority answering that the
 * owner holds nothing tells the body, and the nested run asks as an owner of its own.
 */
const keys = new LockKeys('lock:');

describe('review: a RedLock body whose hold ended is told even when its owner holds again', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let app: TestingModule;
  let other: TestingModule;
  beforeAll(async () => {
    redis = await startRedis();
    // A long watchdog round: the loss is found by the nested grant, not by a renewal (as in issue 41 c).
    const options = { redis: redis.url, watchdogTimeout: 30_000, redlock: { clients: [redis.url], masterTimeout: 1_000 } };
    app = await createLockApp(options);
    other = await createLockApp(options);
  });
  afterAll(async () => {
    await other?.close();
    await app?.close();
    await redis?.stop();
  });

  const KINDS = [
    { label: 'RedLock', run: (m: TestingModule, name: string, fn: (c: LockRunContext) => Promise<unknown>) => m.get(LockService).runRedLock(name, fn, { waitTime: 5_000 }) },
    { label: 'plain lock (control)', run: (m: TestingModule, name: string, fn: (c: LockRunContext) => Promise<unknown>) => m.get(LockService).run(name, fn, { waitTime: 5_000 }) },
  ];

  it.each(KINDS)('$label: the outer body is told once the nested run holds a new hold', async ({ run }) => {
    const name = `review-redlock-${Math.random().toString(36).slice(2)}`;
    const raw = redis.client();
    const otherIn = deferred();
    const otherLeave = deferred();
    const nestedIn = deferred<LockRunContext>();
    const nestedLeave = deferred();
    let nested!: Promise<unknown>;
    let otherRun!: Promise<unknown>;
    try {
      const seen = await run(app, name, async (outer) => {
        const outerToken = outer.fencingToken;
        // Lost behind the body's back (a flush, an operator's DEL).
        expect(await raw.del(keys.lock(name))).toBe(1);
        otherRun = run(other, name, async () => {
          otherIn.resolve();
          await otherLeave.promise;
        });
        await otherIn.promise;
        // A nested run the body starts and does not await: it asks as the body's owner, and waits.
        nested = run(app, name, async (context) => {
          nestedIn.resolve(context);
          await nestedLeave.promise;
        });
        await new Promise((r) => setTimeout(r, 100));
        otherLeave.resolve();
        await otherRun;
        const nestedContext = await nestedIn.promise;
        // Give the model every chance to tell the outer body.
        await waitFor(() => outer.signal.aborted, { what: 'the outer signal', timeoutMs: 1_500 }).catch(() => undefined);
        const masterFence = Number(await raw.hget(keys.lock(name), 'fence'));
        return {
          outerTold: outer.signal.aborted,
          // The token the nested body is given is the one its hold has on the master.
          nestedTokenIsMasters: nestedContext.fencingToken === masterFence,
          masterStartedNewEpisode: masterFence !== outerToken,
        };
      });
      // Received on main 301043b (RedLock): { outerTold: false, nestedTokenIsMasters: false, masterStartedNewEpisode: true }.
      expect(seen).toEqual({ outerTold: true, nestedTokenIsMasters: true, masterStartedNewEpisode: true });
    } finally {
      otherLeave.resolve();
      nestedLeave.resolve();
      await Promise.allSettled([nested, otherRun]);
      await releasesSettled(app);
      raw.disconnect();
    }
  });
});
