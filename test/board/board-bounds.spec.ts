import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Test } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockModule, LockService } from '../../lib';
import type { BoardSnapshot } from '../../lib/board';
import { BoardFilters, MatchBudget, MATCH_BUDGET_PER_REFRESH } from '../../lib/board/board-filters';
import { KeyspaceWalk } from '../../lib/board/keyspace-walk';
import { LockInspector } from '../../lib/introspection/lock-inspector';
import { NameGlob } from '../../lib/introspection/name-glob';
import { LockEngine } from '../../lib/engine/lock-engine';
import { contentionKeyOf } from '../../lib/runtime/instance-registry';
import { startRedis, type TestRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';
import { AUTH, startBoardApp } from './board-app';

/**
 * What one refresh may cost this process, whatever the keyspace and the viewers ask for (found by
 * the board's adversarial review): glob work within a budget per refresh, with verdicts remembered
 * per name; a filter of bounded length; names a filter asks for remembered past the walk's memory;
 * contention counters kept out of the instance identity that `inspect()` reads, and bounded.
 */
describe('lock board: bounded work per refresh', () => {
  let redis: TestRedis;
  let raw: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  afterEach(async () => {
    await raw.flushall();
  });

  /** `count` held locks named `<prefix><i>` written as the library writes them (a held hash with a lease). */
  async function heldLocks(count: number, nameOf: (i: number) => string): Promise<void> {
    const pipeline = raw.pipeline();
    for (let i = 0; i < count; i++) {
      const key = `lock:{${nameOf(i)}}`;
      pipeline.hset(key, 'c0ffee:1', '1', 'fence', String(1_700_000_000_000_000 + i));
      pipeline.pexpire(key, 600_000);
    }
    await pipeline.exec();
  }

  it('refuses a filter longer than 100 characters, saying so', async () => {
    const { app, url } = await startBoardApp('express', { redis: redis.url });
    try {
      const response = await fetch(`${url}/api/lock-board/api/snapshot?match=${'a'.repeat(101)}`, { headers: AUTH });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { message: string }).message).toContain('at most 100 are accepted');
    } finally {
      await app.close();
    }
  });

  it('a costly filter over long names is worked through within a budget per refresh, never in one stall', async () => {
    await heldLocks(2_000, (i) => `${i}:${'a'.repeat(1_000)}`);
    const { app, url } = await startBoardApp('express', { redis: redis.url }, { refreshMs: 250, budget: { locksPerRefresh: 10 } });
    const matches = jest.spyOn(NameGlob.prototype, 'matches');
    const delay = monitorEventLoopDelay({ resolution: 10 });
    try {
      const filter = `*${'a'.repeat(90)}b`;
      const view = async () => (await (await fetch(`${url}/api/lock-board/api/snapshot?match=${filter}`, { headers: AUTH })).json()) as BoardSnapshot;
      delay.enable();
      const first = await view();
      // 2,000 names x 1,000 characters x 92 pattern characters is ten budgets' worth: this refresh did a tenth.
      expect(first.walk.message).toMatch(/The filter has not been checked against [\d,]+ names yet/);
      const perRefresh = Math.ceil(MATCH_BUDGET_PER_REFRESH / (1_000 * 92)) + 1;
      expect(matches.mock.calls.length).toBeLessThanOrEqual(perRefresh * 2);
      await waitFor(async () => !(await view()).walk.message?.includes('not been checked'), {
        what: 'every name checked over later refreshes',
        timeoutMs: 30_000,
        stepMs: 260,
      });
      delay.disable();
      // A generous bound that catches a stall (the review measured 31 s before the budget).
      expect(delay.max / 1e6).toBeLessThan(2_000);
      // Each name was matched once, its verdict remembered: about 2,000 calls in all, not 2,000 per refresh.
      expect(matches.mock.calls.length).toBeLessThan(2_000 + perRefresh * 2);
    } finally {
      matches.mockRestore();
      await app.close();
    }
  }, 60_000);

  it('past the names it remembers, it still remembers the names a filter asks for', async () => {
    await heldLocks(150, (i) => `job:${i}`);
    const moduleRef = await Test.createTestingModule({ imports: [LockModule.forRoot({ redis: redis.url })] }).compile();
    await moduleRef.init();
    try {
      const walk = new KeyspaceWalk(moduleRef.get(LockEngine), moduleRef.get(LockInspector), 10_000, 1_000, { names: 100, filteredOverflow: 10 });
      const filters = new BoardFilters(1_024);
      const all = await walk.refresh([]);
      expect(all.namesFull).toBe(true);
      const shown = new Set(all.views.get(null)!.shown.map((info) => info.name));
      expect(shown.size).toBe(100);
      const forgotten = Array.from({ length: 150 }, (_, i) => `job:${i}`).filter((name) => !shown.has(name));
      const filter = filters.ask(forgotten[0], Date.now());
      const found = await walk.refresh([filter], new MatchBudget());
      expect(found.views.get(forgotten[0])!.shown.map((info) => info.name)).toEqual([forgotten[0]]);
    } finally {
      await moduleRef.close();
    }
  });

  it("keeps an instance's contention counters out of the identity inspect() reads, bounded whatever the names", async () => {
    const board = await startBoardApp('express', { redis: redis.url, watchdogTimeout: 1_500 }, { refreshMs: 250 });
    const other = await Test.createTestingModule({ imports: [LockModule.forRoot({ redis: redis.url, watchdogTimeout: 1_500 })] }).compile();
    await other.init();
    try {
      const holder = board.app.get(LockService);
      const waiter = other.get(LockService);
      // 100 names of 1,000 control characters each, waited for by the other instance.
      const names = Array.from({ length: 100 }, (_, i) => `${i}:${'\u0007'.repeat(1_000)}`);
      const held = names.map((name) => holder.getLock(name));
      for (const lock of held) await lock.lock();
      for (const name of names) expect(await waiter.getLock(name).tryLock({ waitTime: 1 })).toBe(false);
      const instanceKey = `lock.instance:{${other.get(LockEngine).ids.clientId}}`;
      await waitFor(async () => (await raw.exists(contentionKeyOf(instanceKey))) === 1, { what: "the other instance's counters written" });
      expect(await raw.hkeys(instanceKey)).toEqual(expect.not.arrayContaining(['contention']));
      expect(await raw.strlen(contentionKeyOf(instanceKey))).toBeLessThanOrEqual(16_384);
      expect(await raw.pttl(contentionKeyOf(instanceKey))).toBeGreaterThan(0);
      for (const lock of held) await lock.unlock();
    } finally {
      await other.close();
      await board.app.close();
    }
  });

  it('a lost counters key is written again, and one more wait plots as one', async () => {
    const board = await startBoardApp('express', { redis: redis.url, watchdogTimeout: 1_500 }, { refreshMs: 250 });
    const other = await Test.createTestingModule({ imports: [LockModule.forRoot({ redis: redis.url, watchdogTimeout: 1_500 })] }).compile();
    await other.init();
    const view = async () => (await (await fetch(`${board.url}/api/lock-board/api/snapshot`, { headers: AUTH })).json()) as BoardSnapshot;
    try {
      const lock = board.app.get(LockService).getLock('spiky');
      await lock.lock();
      for (let i = 0; i < 5; i++) expect(await other.get(LockService).getLock('spiky').tryLock({ waitTime: 1 })).toBe(false);
      await waitFor(async () => (await view()).contention.find((c) => c.name === 'spiky')?.totals.waits === 5, { what: '5 waits on the board', stepMs: 260 });
      const key = contentionKeyOf(`lock.instance:{${other.get(LockEngine).ids.clientId}}`);
      await raw.del(key);
      await waitFor(async () => (await raw.exists(key)) === 1, { what: 'the counters written again by the next heartbeat' });
      expect(await other.get(LockService).getLock('spiky').tryLock({ waitTime: 1 })).toBe(false);
      await waitFor(async () => (await view()).contention.find((c) => c.name === 'spiky')?.totals.waits === 6, { what: '6 waits', stepMs: 260 });
      const points = (await view()).contention.find((c) => c.name === 'spiky')!.points.map((p) => p.waits);
      expect(Math.max(...points)).toBeLessThanOrEqual(5);
      expect(points.reduce((sum, waits) => sum + waits, 0)).toBeLessThanOrEqual(6);
      await lock.unlock();
    } finally {
      await other.close();
      await board.app.close();
    }
  });
});
