import { Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type Redis from 'ioredis';
import { FairLockService, LockModule, LockService, ReadWriteLockService, SemaphoreService } from '../../lib';
import { LockBoardModule } from '../../lib/board';
import { KeyspaceWalk } from '../../lib/board/keyspace-walk';
import { isCrossSite } from '../../lib/board/lock-board.controller';
import { boardScript, boardStylesheet } from '../../lib/board/board-page';
import { quoteForLog } from '../../lib/board/lock-board.messages';
import type { BoardSnapshot } from '../../lib/board';
import { startRedis, type TestRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';
import { deferred } from '../support/lock-app';
import { AUTH, LogCapture, requestWithHost, startBoardApp, TokenGuard, type Platform } from './board-app';
import { LocalAdminGuard } from '../../sample-app/src/admin/local-admin.guard';

/**
 * The lock board's server side through HTTP (docs/lock-board.md), on Express and Fastify, under a
 * global prefix, against a real Redis: the guard, the page and its assets, what a snapshot shows,
 * force release and its refusals, the bounded walk shared by viewers, contention per name. The page
 * itself is driven in a browser by browser.spec.ts.
 */
describe('lock board: which requests come from another site (isCrossSite)', () => {
  const from = (headers: Record<string, string>) => isCrossSite({ headers });

  it('a browser that sends Sec-Fetch-Site is judged by it alone: same-origin and none pass, anything else is another site', () => {
    // Behind a proxy that rewrites Host, the browser's Origin names the proxy: Sec-Fetch-Site still decides.
    expect(from({ 'sec-fetch-site': 'same-origin', origin: 'https://board.example', host: '10.0.0.7:3000' })).toBe(false);
    expect(from({ 'sec-fetch-site': 'none', host: '10.0.0.7:3000' })).toBe(false);
    expect(from({ 'sec-fetch-site': 'same-site', origin: 'https://board.example', host: 'board.example' })).toBe(true);
    expect(from({ 'sec-fetch-site': 'cross-site', origin: 'https://board.example', host: 'board.example' })).toBe(true);
    expect(from({ 'sec-fetch-site': 'something-new', host: 'board.example' })).toBe(true);
  });

  it('without Sec-Fetch-Site, Origin must name the Host the request arrived with; X-Forwarded-Host is never trusted', () => {
    expect(from({ origin: 'http://127.0.0.1:3000', host: '127.0.0.1:3000' })).toBe(false);
    expect(from({ origin: 'http://Board.Example', host: 'board.example' })).toBe(false);
    expect(from({ origin: 'http://evil.example', host: '127.0.0.1:3000' })).toBe(true);
    // Another site's script can send X-Forwarded-Host itself (an app-wide CORS config lets it through).
    expect(from({ origin: 'http://evil.example', host: '127.0.0.1:3000', 'x-forwarded-host': 'evil.example' })).toBe(true);
    // An old browser behind a proxy that rewrites Host: refused (fails closed), even when the proxy says where it came from.
    expect(from({ origin: 'https://board.example', host: '10.0.0.7:3000', 'x-forwarded-host': 'board.example' })).toBe(true);
    expect(from({ origin: 'null', host: 'board.example' })).toBe(true);
    expect(from({ origin: 'http://board.example' })).toBe(true);
    // A tool sends neither: the guard decides.
    expect(from({ host: 'board.example' })).toBe(false);
  });
});

describe('lock board: values quoted in its log lines (quoteForLog)', () => {
  it('writes a JSON string whose every invisible character is a \\uXXXX escape, so it reads back as the value', () => {
    const value = 'a"b\u2028c\u2029d\u202Ee\u2066f\u200Bg\u{E0100}h\u00A0i\u0085j\u{F0000}k\n';
    const quoted = quoteForLog(value);
    expect(quoted).toBe('"a\\"b\\u2028c\\u2029d\\u202ee\\u2066f\\u200bg\\udb40\\udd00h\\u00a0i\\u0085j\\udb80\\udc00k\\n"');
    expect(quoted).toMatch(/^[\x20-\x7E]*$/);
    expect(JSON.parse(quoted)).toBe(value);
    // Visible text stays as it is.
    expect(quoteForLog('order:42 für Zoë 注文 😀')).toBe('"order:42 für Zoë 注文 😀"');
  });

  it('cuts a value to 200 characters (never inside a surrogate pair) and says how long it was', () => {
    expect(quoteForLog('x'.repeat(200))).toBe(`"${'x'.repeat(200)}"`);
    expect(quoteForLog('x'.repeat(250))).toBe(`"${'x'.repeat(200)}"... (250 characters)`);
    expect(quoteForLog(`${'x'.repeat(199)}😀y`)).toBe(`"${'x'.repeat(199)}"... (202 characters)`);
  });
});

describe.each<Platform>(['express', 'fastify'])('lock board API (%s)', (platform) => {
  let redis: TestRedis;
  let raw: Redis;
  let app: INestApplication;
  let url: string;
  const logs = new LogCapture();

  const get = (path: string, headers: Record<string, string> = AUTH) => fetch(`${url}/api/lock-board${path}`, { headers });
  const snapshot = async (match?: string): Promise<BoardSnapshot> => {
    const response = await get(`/api/snapshot${match === undefined ? '' : `?match=${encodeURIComponent(match)}`}`);
    expect(response.status).toBe(200);
    return (await response.json()) as BoardSnapshot;
  };
  const release = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}/api/lock-board/api/force-release`, {
      method: 'POST',
      headers: { ...AUTH, 'Content-Type': 'application/json', 'X-Lock-Board': '1', ...headers },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
    ({ app, url } = await startBoardApp(platform, { redis: redis.url, clientName: 'board-app' }, { allowForceRelease: true, refreshMs: 250 }, logs));
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });
  afterEach(async () => {
    await raw.flushall();
  });

  it('refuses an anonymous request for the page and the API; serves the script and stylesheet (no data) without the guard', async () => {
    for (const path of ['', '/api/snapshot']) {
      expect((await get(path, {})).status).toBe(403);
    }
    for (const [path, file] of [['/board.js', boardScript()], ['/board.css', boardStylesheet()]]) {
      const asset = await get(path, {});
      expect(asset.status).toBe(200);
      expect(asset.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect(await asset.text()).toBe(file); // the package's own file, the same for everyone
    }
    expect((await release({ name: 'x', kind: 'reentrant', fencingToken: 1, ownerId: 'a:1' }, { Authorization: '' })).status).toBe(403);
  });

  it("refuses another site's script reading the snapshot, even with the user's credentials", async () => {
    expect((await get('/api/snapshot', { ...AUTH, 'Sec-Fetch-Site': 'cross-site' })).status).toBe(403);
    expect((await get('/api/snapshot', { ...AUTH, Origin: 'http://evil.example' })).status).toBe(403);
    expect((await get('/api/snapshot', { ...AUTH, 'Sec-Fetch-Site': 'same-origin', Origin: url })).status).toBe(200);
    // A link from elsewhere still opens the page itself.
    expect((await get('', { ...AUTH, 'Sec-Fetch-Site': 'cross-site' })).status).toBe(200);
  });

  it('serves the page with relative asset URLs under the global prefix, with a strict CSP', async () => {
    const page = await get('');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).toContain('src="lock-board/board.js"');
    expect(html).toContain('href="lock-board/board.css"');
    expect(html).not.toContain('{{base}}');
    const script = await get('/board.js');
    expect(script.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(script.headers.get('x-content-type-options')).toBe('nosniff');
    expect((await get('/board.css')).headers.get('content-type')).toMatch(/^text\/css/);
  });

  it('shows a held lock with its holder, instance, age, TTL and token, and forgets it once released', async () => {
    const locks = app.get(LockService);
    const hold = deferred();
    const running = locks.run('order:42', () => hold.promise);
    await waitFor(async () => (await snapshot()).locks.some((lock) => lock.name === 'order:42'), { what: 'order:42 on the board' });
    const seen = (await snapshot()).locks.find((lock) => lock.name === 'order:42')!;
    expect(seen.kind).toBe('reentrant');
    expect(seen.fencingToken).toBeGreaterThan(0);
    expect(seen.ttl).toBeGreaterThan(0);
    const [holder] = seen.holders;
    expect(holder.holdCount).toBe(1);
    expect(holder.instance).toMatchObject({ clientName: 'board-app', pid: process.pid });
    expect(seen.serverTime - holder.heldSince!).toBeGreaterThanOrEqual(0);
    hold.resolve();
    await running;
    await waitFor(async () => !(await snapshot()).locks.some((lock) => lock.name === 'order:42'), { what: 'order:42 gone from the board' });
  });

  it("shows a fair lock's waiters in line order and a semaphore's permits and waiters", async () => {
    const fair = app.get(FairLockService);
    const semaphores = app.get(SemaphoreService);
    const hold = deferred();
    const holding = fair.run('fair:1', () => hold.promise);
    await waitFor(async () => (await snapshot()).locks.some((lock) => lock.name === 'fair:1'), { what: 'fair:1 held' });
    const first = fair.run('fair:1', () => undefined);
    await waitFor(async () => (await snapshot()).locks.find((lock) => lock.name === 'fair:1')?.waiters?.length === 1, { what: 'first waiter' });
    const second = fair.run('fair:1', () => undefined);
    await waitFor(async () => (await snapshot()).locks.find((lock) => lock.name === 'fair:1')?.waiters?.length === 2, { what: 'second waiter' });
    const line = (await snapshot()).locks.find((lock) => lock.name === 'fair:1')!;
    expect(line.kind).toBe('fair');
    expect(line.waiters![0].ownerId).not.toBe(line.waiters![1].ownerId);

    const permits = await semaphores.getSemaphore('pool', { permits: 3 }).acquire({ take: 2 });
    const waiting = semaphores.run('pool', () => undefined, { permits: 3, take: 2 });
    await waitFor(async () => ((await snapshot()).semaphores.find((s) => s.name === 'pool')?.waiters?.length ?? 0) === 1, { what: 'semaphore waiter' });
    const pool = (await snapshot()).semaphores.find((s) => s.name === 'pool')!;
    expect(pool).toMatchObject({ kind: 'semaphore', permits: 3, available: 1 });
    expect(pool.holders[0].holdCount).toBe(2);
    expect(pool.waiters![0].permits).toBe(2);

    hold.resolve();
    await Promise.all([holding, first, second]);
    await permits.release();
    await waiting;
    await waitFor(async () => {
      const view = await snapshot();
      return view.locks.length === 0 && view.semaphores.length === 0;
    }, { what: 'the board empty again' });
  });

  it('force-releases only the hold shown, only from the page, and writes an audit line naming who', async () => {
    const locks = app.get(LockService);
    const lock = locks.getLock('stuck');
    await lock.lock({ leaseTime: 60_000 });
    const token = lock.getFencingToken()!;
    const { ownerId } = (await locks.inspect('stuck')).holders[0];
    const body = { name: 'stuck', kind: 'reentrant', fencingToken: token, ownerId };
    // Not from the page: no custom header, another site, another origin, not JSON.
    expect((await release(body, { 'X-Lock-Board': '' })).status).toBe(403);
    expect((await release(body, { 'Sec-Fetch-Site': 'cross-site' })).status).toBe(403);
    expect((await release(body, { Origin: 'http://evil.example' })).status).toBe(403);
    expect((await release({ ...body, fencingToken: 'x' })).status).toBe(400);
    // A token the lock no longer has: refused, nothing changes.
    const stale = await release({ ...body, fencingToken: token - 1 });
    expect(stale.status).toBe(409);
    expect(await stale.json()).toMatchObject({ released: false });
    expect((await locks.inspect('stuck')).locked).toBe(true);
    // The token shown: released once; the same request again is refused.
    const ok = await release(body, { Origin: url, 'Sec-Fetch-Site': 'same-origin' });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ released: true });
    expect((await locks.inspect('stuck')).locked).toBe(false);
    expect((await release(body)).status).toBe(409);
    const audit = logs.lines.filter((line) => line.context === 'LockBoard');
    expect(audit.filter((line) => line.message.includes('"stuck"')).map((line) => `${line.level}: ${line.message}`)).toEqual([
      `warn: force release of reentrant "stuck" (holder "${ownerId}", fencing token ${token - 1}) by "ops-1": refused, it is held with fencing token ${token} now, not ${token - 1} (taken again since the board showed it)`,
      `log: force release of reentrant "stuck" (holder "${ownerId}", fencing token ${token}) by "ops-1": released (checked first: a reentrant hold of that holder with that token)`,
      `warn: force release of reentrant "stuck" (holder "${ownerId}", fencing token ${token}) by "ops-1": refused, it is not held (it was released since the board showed it)`,
    ]);
    await lock.unlock().catch(() => undefined);
  });

  it('releases nothing unless the lock is as shown: its kind, the holder posted and its token (409, saying what it found)', async () => {
    const locks = app.get(LockService);
    const lock = locks.getLock('checked');
    await lock.lock({ leaseTime: 60_000 });
    const token = lock.getFencingToken()!;
    const { ownerId } = (await locks.inspect('checked')).holders[0];
    const shown = { name: 'checked', kind: 'reentrant', fencingToken: token, ownerId };
    const refusal = async (body: Record<string, unknown>) => {
      const response = await release(body);
      return { status: response.status, message: ((await response.json()) as { message: string }).message };
    };
    // Another holder, with the right token (the review's case: another kind and holder, only the token right).
    expect(await refusal({ ...shown, kind: 'fair', ownerId: 'somebody-else:1' })).toEqual({
      status: 409,
      message: `Not released: "checked" is held by "${ownerId}" now, not by "somebody-else:1"`,
    });
    // Another kind: the name's read-write lock and semaphore are other records, not held.
    expect(await refusal({ ...shown, kind: 'read-write' })).toEqual({ status: 409, message: 'Not released: "checked" is not held (it was released since the board showed it)' });
    expect(await refusal({ ...shown, kind: 'semaphore' })).toEqual({ status: 409, message: 'Not released: "checked" is not held (it was released since the board showed it)' });
    expect((await locks.inspect('checked')).fencingToken).toBe(token);
    // Reentrant and fair are one lock (one hash): asked as fair, the reentrant hold shown is released, and the audit line says so.
    expect((await release({ ...shown, kind: 'fair' })).status).toBe(200);
    expect((await locks.inspect('checked')).locked).toBe(false);
    const audit = logs.lines.filter((line) => line.context === 'LockBoard' && line.message.includes('"checked"')).map((line) => `${line.level}: ${line.message}`);
    expect(audit).toHaveLength(4);
    expect(audit[0]).toBe(
      `warn: force release of fair "checked" (holder "somebody-else:1", fencing token ${token}) by "ops-1": refused, it is held by "${ownerId}" now, not by "somebody-else:1"`,
    );
    expect(audit[3]).toBe(
      `log: force release of fair "checked" (holder "${ownerId}", fencing token ${token}) by "ops-1": released (checked first: a reentrant hold of that holder with that token; asked as fair)`,
    );
  });

  it("releases a read-write lock's write hold by its writer and token; a read hold is refused with 400", async () => {
    const rw = app.get(ReadWriteLockService).getReadWriteLock('rw:1');
    await rw.writeLock().lock({ leaseTime: 60_000 });
    const written = await app.get(ReadWriteLockService).inspect('rw:1');
    const writer = written.holders.find((holder) => holder.mode === 'write')!;
    expect((await release({ name: 'rw:1', kind: 'read-write', fencingToken: written.fencingToken, ownerId: 'reader:1' })).status).toBe(409);
    expect((await release({ name: 'rw:1', kind: 'read-write', fencingToken: written.fencingToken, ownerId: writer.ownerId })).status).toBe(200);
    expect((await app.get(ReadWriteLockService).inspect('rw:1')).locked).toBe(false);

    const reader = app.get(ReadWriteLockService).getReadWriteLock('rw:2').readLock();
    await reader.lock({ leaseTime: 60_000 });
    const read = await app.get(ReadWriteLockService).inspect('rw:2');
    const readHeld = await release({ name: 'rw:2', kind: 'read-write', fencingToken: 1, ownerId: read.holders[0].ownerId });
    expect(readHeld.status).toBe(400);
    expect(((await readHeld.json()) as { message: string }).message).toMatch(/a read hold has no fencing token/);
    expect((await app.get(ReadWriteLockService).inspect('rw:2')).locked).toBe(true);
  });

  it("refuses a semaphore holder that is not the one posted, or whose token changed; an over-long name is the library's 400", async () => {
    const semaphores = app.get(SemaphoreService);
    const permit = await semaphores.getSemaphore('seats', { permits: 2 }).acquire();
    const [holder] = (await semaphores.inspect('seats')).holders;
    expect((await release({ name: 'seats', kind: 'semaphore', fencingToken: holder.fencingToken, ownerId: 'other:1' })).status).toBe(409);
    expect((await release({ name: 'seats', kind: 'semaphore', fencingToken: holder.fencingToken! + 1, ownerId: holder.ownerId })).status).toBe(409);
    expect((await semaphores.inspect('seats')).holders).toHaveLength(1);
    await permit.release();

    const tooLong = await release({ name: 'n'.repeat(1_025), kind: 'reentrant', fencingToken: 1, ownerId: 'a:1' });
    expect(tooLong.status).toBe(400);
    expect(((await tooLong.json()) as { message: string }).message).toMatch(/1,?025/);
  });

  it('the audit line shows what the request named, quoted: a line or bidi separator in a name or holder cannot forge or hide text', async () => {
    const locks = app.get(LockService);
    const lockName = 'audit:\u2028forged\u202E';
    const lock = locks.getLock(lockName);
    await lock.lock({ leaseTime: 60_000 });
    const { ownerId } = (await locks.inspect(lockName)).holders[0];
    const forged = `${ownerId}\u2028[Nest] 1 - LOG [LockBoard] force release by "alice": released\u202E${'x'.repeat(300)}`;
    await release({ name: lockName, kind: 'reentrant', fencingToken: lock.getFencingToken(), ownerId: forged });
    const line = logs.lines.find((entry) => entry.context === 'LockBoard' && entry.message.includes('"audit:\\u2028forged\\u202e"'))?.message;
    expect(line).toBeDefined();
    expect(line).not.toMatch(/[\n\r\u0085\u2028\u2029\u200E\u200F\u202A-\u202E\u2066-\u2069]/);
    expect(line).toContain(`(holder "${ownerId}\\u2028[Nest] 1 - LOG [LockBoard] force release by \\"alice\\": released\\u202e${'x'.repeat(200 - (forged.length - 300))}"`);
    expect(line).toContain(`... (${forged.length} characters)`);
  });

  it("force-releases a semaphore holder's permits by its token", async () => {
    const semaphores = app.get(SemaphoreService);
    const permit = await semaphores.getSemaphore('slots', { permits: 2 }).acquire();
    await waitFor(async () => (await snapshot()).semaphores.some((s) => s.name === 'slots'), { what: 'slots on the board' });
    const holder = (await snapshot()).semaphores.find((s) => s.name === 'slots')!.holders[0];
    const response = await release({ name: 'slots', kind: 'semaphore', fencingToken: holder.fencingToken, ownerId: holder.ownerId });
    expect(response.status).toBe(200);
    await waitFor(async () => !(await snapshot()).semaphores.some((s) => s.name === 'slots'), { what: 'slots free' });
    await permit.release().catch(() => undefined);
  });

  it('answers a bad filter with 400 naming the problem, and filters by name', async () => {
    const bad = await get('/api/snapshot?match=' + encodeURIComponent('[z-a]'));
    expect(bad.status).toBe(400);
    const locks = app.get(LockService);
    const a = locks.getLock('order:1');
    const b = locks.getLock('user:1');
    await a.lock();
    await b.lock();
    await waitFor(async () => (await snapshot('order:*')).locks.map((lock) => lock.name).join() === 'order:1', { what: 'only order:1' });
    await a.unlock();
    await b.unlock();
  });

  it('one walk per refresh, shared by every viewer', async () => {
    const refresh = jest.spyOn(KeyspaceWalk.prototype, 'refresh');
    try {
      // Past the cached reading's age, then ten viewers at once.
      await new Promise((resolve) => setTimeout(resolve, 300));
      refresh.mockClear();
      const views = await Promise.all(Array.from({ length: 10 }, () => snapshot()));
      expect(refresh).toHaveBeenCalledTimes(1);
      expect(new Set(views.map((view) => view.serverTime)).size).toBe(1);
    } finally {
      refresh.mockRestore();
    }
  });
});

describe('lock board: an actor option that fails', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it.each([
    // A plausible actor: the e-mail from a profile the app's auth did not put on this request.
    ['throws', (request: unknown) => (request as { user: { profile: { email: string } } }).user.profile.email, /option "actor" threw: .*reading 'email'/],
    ['gives a number', () => 42 as unknown as string, /option "actor" gave 42, not a string/],
  ])('one that %s answers 500 with a generic message, logs why (context LockBoard), and releases nothing', async (_, actor, logged) => {
    const logs = new LogCapture();
    const { app, url } = await startBoardApp('express', { redis: redis.url }, { allowForceRelease: true, actor }, logs);
    try {
      const locks = app.get(LockService);
      const lock = locks.getLock('actor:job');
      await lock.lock({ leaseTime: 60_000 });
      const info = await locks.inspect('actor:job');
      const response = await fetch(`${url}/api/lock-board/api/force-release`, {
        method: 'POST',
        headers: { ...AUTH, 'Content-Type': 'application/json', 'X-Lock-Board': '1' },
        body: JSON.stringify({ name: 'actor:job', kind: 'reentrant', fencingToken: info.fencingToken, ownerId: info.holders[0].ownerId }),
      });
      expect(response.status).toBe(500);
      const { message } = (await response.json()) as { message: string };
      expect(message).toBe('Force release refused: the board could not tell who is asking (see the server log); nothing was released');
      expect((await locks.inspect('actor:job')).fencingToken).toBe(info.fencingToken);
      const board = logs.lines.filter((line) => line.context === 'LockBoard');
      expect(board.map((line) => line.level)).toEqual(['error']);
      expect(board[0].message).toMatch(logged);
      await lock.forceUnlock();
    } finally {
      await app.close();
    }
  });
});

describe('lock board: the walk within its budget, contention per name', () => {
  let redis: TestRedis;
  let raw: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    raw = redis.client();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('on a keyspace bigger than its budget it says the view is partial, and finds every lock over later refreshes', async () => {
    const junk = raw.pipeline();
    for (let i = 0; i < 5_000; i++) junk.set(`other:${i}`, 'x');
    await junk.exec();
    const { app, url } = await startBoardApp('express', { redis: redis.url }, { refreshMs: 250, budget: { keysPerRefresh: 1_000 } });
    try {
      const locks = app.get(LockService);
      const names = ['a', 'b', 'c'];
      const held = names.map((name) => locks.getLock(name));
      for (const lock of held) await lock.lock();
      const first = (await (await fetch(`${url}/api/lock-board/api/snapshot`, { headers: AUTH })).json()) as BoardSnapshot;
      expect(first.walk.complete).toBe(false);
      expect(first.walk.keysScanned).toBeLessThanOrEqual(1_000);
      expect(first.walk.message).toMatch(/Partial view: this refresh walked 1,000 keys of about 5,00\d/);
      await waitFor(
        async () => {
          const view = (await (await fetch(`${url}/api/lock-board/api/snapshot`, { headers: AUTH })).json()) as BoardSnapshot;
          return names.every((name) => view.locks.some((lock) => lock.name === name));
        },
        { what: 'every lock found by the walk', timeoutMs: 15_000, stepMs: 260 },
      );
      for (const lock of held) await lock.unlock();
    } finally {
      await app.close();
      await raw.flushall();
    }
  });

  it('a complete walk counts the keys in Redis, not the SCAN batch it asked for (13 keys: 13, not 1,000)', async () => {
    const junk = raw.pipeline();
    for (let i = 0; i < 10; i++) junk.set(`other:${i}`, 'x');
    await junk.exec();
    const { app, url } = await startBoardApp('express', { redis: redis.url }, { refreshMs: 250 });
    try {
      const held = app.get(LockService).getLock('small');
      await held.lock();
      const before = await raw.dbsize();
      const view = (await (await fetch(`${url}/api/lock-board/api/snapshot`, { headers: AUTH })).json()) as BoardSnapshot;
      const after = await raw.dbsize();
      expect(view.walk.complete).toBe(true);
      expect(before).toBeLessThan(30);
      expect(view.walk.keysScanned).toBeGreaterThanOrEqual(Math.min(before, after));
      expect(view.walk.keysScanned).toBeLessThanOrEqual(Math.max(before, after));
      expect(view.locks.map((lock) => lock.name)).toEqual(['small']);
      await held.unlock();
    } finally {
      await app.close();
      await raw.flushall();
    }
  });

  it('shows at most locksPerRefresh locks, says so, and inspects the names a viewer filters for first', async () => {
    const { app, url } = await startBoardApp('express', { redis: redis.url }, { refreshMs: 250, budget: { locksPerRefresh: 2 } });
    const view = async (match?: string) =>
      (await (await fetch(`${url}/api/lock-board/api/snapshot${match ? `?match=${encodeURIComponent(match)}` : ''}`, { headers: AUTH })).json()) as BoardSnapshot;
    try {
      const locks = app.get(LockService);
      const held = ['k1', 'k2', 'k3', 'k4', 'zz-wanted'].map((name) => locks.getLock(name));
      for (const lock of held) await lock.lock();
      const all = await view();
      expect(all.locks).toHaveLength(2);
      expect(all.walk.truncated).toBe(true);
      expect(all.walk.message).toContain('Showing 2 of 5 locks found');
      await waitFor(async () => (await view('zz-*')).locks.some((lock) => lock.name === 'zz-wanted'), { what: 'the filtered name inspected first', stepMs: 260 });
      for (const lock of held) await lock.unlock();
    } finally {
      await app.close();
      await raw.flushall();
    }
  });

  it("counts waits, timeouts and skips per name across instances (each instance's heartbeat publishes its own)", async () => {
    const board = await startBoardApp('express', { redis: redis.url, watchdogTimeout: 1_500 }, { refreshMs: 250 });
    const other = await Test.createTestingModule({ imports: [LockModule.forRoot({ redis: redis.url, watchdogTimeout: 1_500 })] }).compile();
    await other.init();
    try {
      const holder = board.app.get(LockService).getLock('hot');
      await holder.lock();
      const cron = board.app.get(LockService).getLock('cron');
      await cron.lock();
      // The other instance waits and times out twice and skips once (a skip is not a wait).
      const otherLocks = other.get(LockService);
      expect(await otherLocks.getLock('hot').tryLock({ waitTime: 50 })).toBe(false);
      expect(await otherLocks.getLock('hot').tryLock({ waitTime: 50 })).toBe(false);
      expect(await otherLocks.run('hot', () => 'ran', { skipIfLocked: true })).toBeUndefined();
      // A name only ever skipped (a cron job's other replicas) shows skips, and no wait.
      expect(await otherLocks.run('cron', () => 'ran', { skipIfLocked: true })).toBeUndefined();
      expect(await otherLocks.run('cron', () => 'ran', { skipIfLocked: true })).toBeUndefined();
      let seen: BoardSnapshot['contention'] = [];
      await waitFor(
        async () => {
          const view = (await (await fetch(`${board.url}/api/lock-board/api/snapshot`, { headers: AUTH })).json()) as BoardSnapshot;
          seen = view.contention;
          const hot = view.contention.find((entry) => entry.name === 'hot');
          return hot?.totals.waits === 2 && hot.totals.skips === 1 && view.contention.some((entry) => entry.name === 'cron');
        },
        { what: "the other instance's contention on the board", timeoutMs: 10_000, stepMs: 260 },
      );
      expect(seen.find((entry) => entry.name === 'hot')?.totals).toMatchObject({ waits: 2, timeouts: 2, skips: 1 });
      expect(seen.find((entry) => entry.name === 'hot')!.totals.waitMs).toBeGreaterThanOrEqual(100);
      expect(seen.find((entry) => entry.name === 'cron')?.totals).toEqual({ waits: 0, waitMs: 0, timeouts: 0, skips: 2 });
      await holder.unlock();
      await cron.unlock();
    } finally {
      await other.close();
      await board.app.close();
      await raw.flushall();
    }
  });
});

describe('lock board: bad set-up fails at start, naming the option', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  const compile = (board: unknown, withLocks = true) =>
    Test.createTestingModule({
      imports: [...(withLocks ? [LockModule.forRoot({ redis: redis.url })] : []), LockBoardModule.forRoot(board as never)],
    })
      .compile()
      .then(async (moduleRef) => {
        const app = moduleRef.createNestApplication({ logger: false });
        try {
          await app.init();
        } finally {
          await app.close();
        }
      });

  it('a missing guard', async () => {
    await expect(compile({})).rejects.toThrow(/option "guard" is required/);
    await expect(compile({ guard: undefined })).rejects.toThrow(/option "guard" is required/);
    await expect(compile({ guard: {} })).rejects.toThrow(/option "guard" must be a Nest guard/);
  });
  it('a bad path, refresh or budget', () => {
    expect(() => LockBoardModule.forRoot({ guard: false, path: 'a/:id' })).toThrow(/option "path" must be a route of plain path segments/);
    return Promise.all([
      expect(compile({ guard: TokenGuard, refreshMs: 10 })).rejects.toThrow(/option "refreshMs" must be an integer from 250 to 60,000/),
      expect(compile({ guard: TokenGuard, budget: { keysPerRefresh: 5 } })).rejects.toThrow(/"budget.keysPerRefresh" must be an integer/),
      expect(compile({ guard: TokenGuard, allowForceRelase: true })).rejects.toThrow(/option "allowForceRelase" is not a known option/),
    ]);
  });
  it('no LockModule in the app', async () => {
    await expect(compile({ guard: TokenGuard }, false)).rejects.toThrow(/LockBoardModule needs LockModule/);
  });
  it('guard: false starts, with a warning, answers only a loopback Host, and force release stays off by default', async () => {
    const logs = new LogCapture();
    const { app, url } = await startBoardApp('express', { redis: redis.url }, { guard: false }, logs);
    try {
      expect(logs.lines.some((line) => line.level === 'warn' && line.context === 'LockBoard' && line.message.includes('no guard'))).toBe(true);
      expect((await fetch(`${url}/api/lock-board/api/snapshot`)).status).toBe(200);
      const { port } = new URL(url);
      for (const host of [`localhost:${port}`, 'LOCALHOST', `app.localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) {
        expect({ host, status: (await requestWithHost(url, host, 'GET', '/api/lock-board/api/snapshot')).status }).toEqual({ host, status: 200 });
      }
      // A page of another site whose name was rebound to 127.0.0.1 (DNS rebinding): same-origin to the browser, but not a loopback Host.
      for (const host of [`rebind.attacker.example:${port}`, `127.0.0.2:${port}`, `localhost.attacker.example`, `[::ffff:127.0.0.1]:${port}`]) {
        const refused = await requestWithHost(url, host, 'GET', '/api/lock-board/api/snapshot', { 'Sec-Fetch-Site': 'same-origin' });
        expect({ host, status: refused.status }).toEqual({ host, status: 403 });
        expect(refused.body).toContain('answers only requests to a loopback name');
      }
      expect((await requestWithHost(url, `rebind.attacker.example:${port}`, 'GET', '/api/lock-board')).status).toBe(403);
      const post = await fetch(`${url}/api/lock-board/api/force-release`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Lock-Board': '1' },
        body: JSON.stringify({ name: 'x', kind: 'reentrant', fencingToken: 1, ownerId: 'a:1' }),
      });
      expect(post.status).toBe(404);
    } finally {
      await app.close();
    }
  });
});

describe("lock board behind the sample app's guard (LocalAdminGuard: this machine only)", () => {
  let redis: TestRedis;
  let app: INestApplication;
  let url: string;

  beforeAll(async () => {
    redis = await startRedis();
    ({ app, url } = await startBoardApp('express', { redis: redis.url }, { guard: LocalAdminGuard, allowForceRelease: true }));
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('a page of another site whose name was rebound to 127.0.0.1 can neither read the snapshot nor force-release', async () => {
    const { port } = new URL(url);
    const locks = app.get(LockService);
    const lock = locks.getLock('sample:job');
    await lock.lock({ leaseTime: 60_000 });
    try {
      const info = await locks.inspect('sample:job');
      // What Chromium sends from http://rebind.attacker.example:<port>/ once that name resolves to 127.0.0.1.
      const rebound = { Origin: `http://rebind.attacker.example:${port}`, 'Sec-Fetch-Site': 'same-origin' };
      const post = (host: string, headers: Record<string, string>) =>
        requestWithHost(
          url,
          host,
          'POST',
          '/api/lock-board/api/force-release',
          { ...headers, 'Content-Type': 'application/json', 'X-Lock-Board': '1' },
          JSON.stringify({ name: 'sample:job', kind: 'reentrant', fencingToken: info.fencingToken, ownerId: info.holders[0].ownerId }),
        );
      const read = await requestWithHost(url, `rebind.attacker.example:${port}`, 'GET', '/api/lock-board/api/snapshot', rebound);
      expect(read.status).toBe(403);
      expect(read.body).not.toContain('sample:job');
      expect((await post(`rebind.attacker.example:${port}`, rebound)).status).toBe(403);
      expect((await locks.inspect('sample:job')).fencingToken).toBe(info.fencingToken);
      // The board's own page on this machine is let in.
      expect((await requestWithHost(url, `localhost:${port}`, 'GET', '/api/lock-board/api/snapshot')).status).toBe(200);
      expect((await post(`localhost:${port}`, { Origin: `http://localhost:${port}`, 'Sec-Fetch-Site': 'same-origin' })).status).toBe(200);
    } finally {
      await lock.forceUnlock().catch(() => undefined);
    }
  });
});

describe('lock board on the testing kit (no Redis)', () => {
  it("shows a lock held elsewhere in a user's unit test", async () => {
    const { LockTestingModule, LockTestingControls } = await import('../../lib/testing');
    const moduleRef = await Test.createTestingModule({ imports: [LockTestingModule.forRoot(), LockBoardModule.forRoot({ guard: false })] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    try {
      const elsewhere = await app.get(LockTestingControls).holdElsewhere('kit:1');
      const { port } = app.getHttpServer().address() as { port: number };
      const view = (await (await fetch(`http://127.0.0.1:${port}/lock-board/api/snapshot`)).json()) as BoardSnapshot;
      expect(view.walk.complete).toBe(true);
      expect(view.locks.map((lock) => lock.name)).toEqual(['kit:1']);
      await elsewhere.release();
    } finally {
      await app.close();
    }
  });
});

describe('lock board: forRootAsync', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('takes its path from the call and the rest (a guard class included) from the factory', async () => {
    const SETTINGS = Symbol('settings');
    @Module({ providers: [{ provide: SETTINGS, useValue: { forceRelease: true } }, TokenGuard], exports: [SETTINGS, TokenGuard] })
    class SettingsModule {}
    const moduleRef = await Test.createTestingModule({
      imports: [
        LockModule.forRoot({ redis: redis.url }),
        LockBoardModule.forRootAsync({
          path: 'ops/locks',
          imports: [SettingsModule],
          inject: [SETTINGS],
          useFactory: (settings: { forceRelease: boolean }) => ({ guard: TokenGuard, allowForceRelease: settings.forceRelease, refreshMs: 500 }),
        }),
      ],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    try {
      const { port } = app.getHttpServer().address() as { port: number };
      const base = `http://127.0.0.1:${port}/ops/locks`;
      expect((await fetch(base)).status).toBe(403);
      const page = await fetch(base, { headers: AUTH });
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('src="locks/board.js"');
      const view = (await (await fetch(`${base}/api/snapshot`, { headers: AUTH })).json()) as BoardSnapshot;
      expect(view).toMatchObject({ forceRelease: true, refreshMs: 500 });
    } finally {
      await app.close();
    }
  });

  it('a factory that returns no guard fails the start, naming the option', async () => {
    const start = async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [LockModule.forRoot({ redis: redis.url }), LockBoardModule.forRootAsync({ useFactory: () => ({}) as never })],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      try {
        await app.init();
      } finally {
        await app.close();
      }
    };
    await expect(start()).rejects.toThrow(/option "guard" is required/);
  });
});
