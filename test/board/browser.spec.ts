import { readdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { TestingModule } from '@nestjs/testing';
import type { Browser, BrowserContext, Dialog, Page } from 'playwright-core';
import { FairLockService, LockService, SemaphoreService, type Lock } from '../../lib';
import { boardScript } from '../../lib/board/board-page';
import { startRedis, type TestRedis } from '../support/redis-server';
import { waitFor } from '../support/wait-for';
import {
  AUTH_HEADERS,
  authenticatedContext,
  CHROMIUM_PATH,
  chromiumInstalled,
  launchChromium,
  parseShownDuration,
  RecordingLogger,
  rowNamed,
  startBoardApp,
  startOtherOrigin,
  startReverseProxy,
  startWorker,
  type BoardApp,
  type Platform,
} from './browser-support';

/**
 * The lock board's page in a real browser (Debian's Chromium through playwright-core), against a
 * real Nest app on Express and on Fastify under a global prefix, with a real Redis: what the page
 * shows as locks are taken and released, the live TTL, names as text, force release through the
 * confirmation dialog, refusals of cross-origin posts, and an axe-core check.
 * The HTTP API alone is covered by board-api.spec.ts.
 */

const ASSETS = join(__dirname, '..', '..', 'lib', 'board', 'assets');

describe('lock board page: its script never parses strings as markup', () => {
  it('board.js sets no innerHTML / outerHTML / insertAdjacentHTML, writes no document, evaluates no string', () => {
    // Every part of the script (assets/script/, joined into the served board.js), and what is served.
    const parts = readdirSync(join(ASSETS, 'script')).filter((file) => file.endsWith('.js'));
    expect(parts.length).toBeGreaterThan(1);
    for (const script of [...parts.map((file) => readFileSync(join(ASSETS, 'script', file), 'utf8')), boardScript()]) {
      expect(script).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\s*\(|new Function|setAttribute\(\s*['"]on|createContextualFragment|DOMParser/);
      // Timers only take functions.
      expect(script).not.toMatch(/set(?:Timeout|Interval)\(\s*['"`]/);
    }
  });

  it('board.js is its parts joined in one strict-mode function, each part once', () => {
    const script = boardScript();
    expect(script.startsWith("(function () {\n'use strict';\n")).toBe(true);
    expect(script.trimEnd().endsWith('})();')).toBe(true);
    for (const file of readdirSync(join(ASSETS, 'script')).filter((name) => name.endsWith('.js'))) {
      expect(script.split(`// ---- ${file} ----`)).toHaveLength(2);
      expect(script).toContain(readFileSync(join(ASSETS, 'script', file), 'utf8').trimEnd());
    }
  });

  it('board.html has no inline script, inline style or event handler attribute (the CSP allows none)', () => {
    const html = readFileSync(join(ASSETS, 'board.html'), 'utf8');
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
    expect(html).not.toMatch(/<style/i);
    expect(html).not.toMatch(/\sstyle=/i);
    expect(html).not.toMatch(/\son[a-z]+=/i);
    expect(html).toContain('<script defer src="{{base}}board.js"></script>');
    expect(html).toContain('href="{{base}}board.css"');
  });
});

const haveChromium = chromiumInstalled();
if (!haveChromium && !process.env.CI) {
  // eslint-disable-next-line no-console
  console.warn(`test/board/browser.spec.ts: skipped, no Chromium at ${CHROMIUM_PATH} (apt-get install chromium; in CI this fails instead)`);
}
const describeInBrowser = haveChromium || process.env.CI ? describe : describe.skip;

describeInBrowser('lock board page in a browser', () => {
  let redis: TestRedis;
  let browser: Browser;
  let worker: TestingModule;
  const logs = new RecordingLogger();

  beforeAll(async () => {
    if (!haveChromium) throw new Error(`no Chromium at ${CHROMIUM_PATH}: the CI machine must have it (.ci/run installs the Debian package chromium)`);
    [redis, browser] = await Promise.all([startRedis(), launchChromium()]);
    // Another instance that takes the locks the board shows (its own client name, same host and pid).
    worker = await startWorker({ redis: redis.url, clientName: 'worker' }, logs);
  });
  afterAll(async () => {
    await browser?.close();
    await worker?.close();
    await redis?.stop();
  });

  describe.each<Platform>(['express', 'fastify'])('on %s', (platform) => {
    let board: BoardApp;
    let readOnly: BoardApp;
    let context: BrowserContext;
    let cleanups: Array<() => Promise<unknown>> = [];
    /** Dialogs (alert, confirm) the page opened: a name that ran as markup would open one. */
    let dialogs: string[] = [];
    let pageErrors: string[] = [];
    const name = (what: string): string => `${platform}:${what}`;

    beforeAll(async () => {
      [board, readOnly] = await Promise.all([
        startBoardApp(platform, { redis: redis.url, clientName: `board-${platform}` }, { allowForceRelease: true, refreshMs: 250 }, logs),
        startBoardApp(platform, { redis: redis.url, clientName: `read-only-${platform}` }, { refreshMs: 250 }, logs),
      ]);
      context = await authenticatedContext(browser, board.origin);
    });
    afterAll(async () => {
      await context?.close();
      await board?.app.close();
      await readOnly?.app.close();
    });
    beforeEach(() => {
      dialogs = [];
      pageErrors = [];
    });
    afterEach(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
      cleanups = [];
      expect(dialogs).toEqual([]);
      expect(pageErrors).toEqual([]);
      // Closing pages and apps after a test that filled Redis can take a while on a loaded machine.
    }, 60_000);

    /** Opens `url` in the authenticated context, failing the test on any dialog or page error. */
    async function open(url = board.boardUrl, inContext: BrowserContext = context): Promise<Page> {
      const page = await inContext.newPage();
      cleanups.push(() => page.close());
      page.on('dialog', (dialog: Dialog) => {
        dialogs.push(`${dialog.type()}: ${dialog.message()}`);
        void dialog.dismiss().catch(() => undefined);
      });
      page.on('pageerror', (error) => pageErrors.push(error.message));
      // The page keeps to its CSP: a blocked script, style or request shows as a console error.
      page.on('console', (message) => {
        if (message.type() === 'error' && /Content[- ]Security[- ]Policy|Refused to/i.test(message.text())) pageErrors.push(message.text());
      });
      await page.goto(url);
      // The first snapshot arrived.
      await page.getByTestId('walk-status').filter({ hasText: /keys/ }).waitFor();
      return page;
    }

    /** A lock of the worker instance, held with a fixed lease (no watchdog renewal), released after the test. */
    async function holdLock(lockName: string, leaseTime = 20_000): Promise<Lock> {
      const lock = worker.get(LockService).getLock(lockName);
      await lock.lock({ leaseTime });
      cleanups.push(() => lock.forceUnlock());
      return lock;
    }

    it('the guard refuses an anonymous request for the page and the snapshot (403); a let-in response carries the CSP', async () => {
      expect((await fetch(board.boardUrl)).status).toBe(403);
      expect((await fetch(`${board.boardUrl}/api/snapshot`)).status).toBe(403);
      expect((await fetch(`${board.boardUrl}/api/snapshot`, { headers: { cookie: 'board_auth=wrong' } })).status).toBe(403);
      const page = await fetch(board.boardUrl, { headers: AUTH_HEADERS });
      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
      expect((await fetch(`${board.boardUrl}/api/snapshot`, { headers: AUTH_HEADERS })).status).toBe(200);
    });

    // Express answers `<path>/` with the page; Fastify's router does not by default (404 unless the
    // adapter is made with ignoreTrailingSlash), so there the page is only at `<path>`.
    (platform === 'express' ? it : it.skip)('the page works from its URL with a trailing slash too (assets and API found relative to the script)', async () => {
      const lockName = name('slash');
      await holdLock(lockName);
      const page = await open(`${board.boardUrl}/`);
      await rowNamed(page, 'locks-table', lockName).waitFor();
    });

    (platform === 'express' ? it : it.skip)("a walk that did not cover the keyspace says so on the page ('partial: ...')", async () => {
      const raw = redis.client();
      const filler = Array.from({ length: 2_500 }, (_, i) => [`filler:${i}`, '1']).flat();
      await raw.mset(...filler);
      cleanups.push(async () => {
        await raw.unlink(...filler.filter((_, i) => i % 2 === 0));
        raw.disconnect();
      });
      const small = await startBoardApp(platform, { redis: redis.url, clientName: 'small-budget' }, { refreshMs: 250, budget: { keysPerRefresh: 1_000 } }, logs);
      cleanups.push(() => small.app.close());
      const page = await open(small.boardUrl);
      const status = page.getByTestId('walk-status');
      await status.filter({ hasText: /^partial: / }).waitFor();
      expect(await status.textContent()).toMatch(/^partial: .*\b1,000 keys\b/);
    });

    it('held locks appear with kind, holder instance, hold count, token and live TTL, filter by name, and disappear once released', async () => {
      const first = await holdLock(name('held:orders'));
      const second = await holdLock(name('other:billing'));
      // Re-entered once: hold count 2.
      await first.lock({ leaseTime: 20_000 });
      const page = await open();

      const row = rowNamed(page, 'locks-table', name('held:orders'));
      await row.waitFor();
      await expect(row.textContent()).resolves.toContain('reentrant');
      const holder = row.getByTestId('holder');
      await expect(holder.textContent()).resolves.toContain(`${hostname()} · pid ${process.pid}`);
      await expect(holder.textContent()).resolves.toContain('hold count 2');
      await expect(row.getByTestId('fencing-token').textContent()).resolves.toBe(String(first.getFencingToken()));
      await rowNamed(page, 'locks-table', name('other:billing')).waitFor();
      // The worker shows among the live instances, up for as long as it has run (counting up).
      const workerRow = page.getByTestId('instances-table').locator('tbody tr', { hasText: 'worker' }).first();
      await workerRow.waitFor();
      await expect(page.getByTestId('instances-table').locator('thead').textContent()).resolves.toContain('Up for');
      const upFor = workerRow.getByTestId('up-for');
      const upBefore = parseShownDuration(await upFor.textContent());
      expect(upBefore).toBeGreaterThanOrEqual(0);
      await waitFor(async () => parseShownDuration(await upFor.textContent()) > upBefore, { what: 'the uptime shown to count up' });
      // A complete walk counts the keys in Redis (what DBSIZE says, give or take the few that come and
      // go meanwhile), not the 1,000 SCAN was allowed to look at in one call.
      const walked = /^Complete: walked all ([\d,]+) keys? in Redis, inspected \d+ locks?\./.exec((await page.getByTestId('walk-status').textContent()) ?? '');
      expect(walked).not.toBeNull();
      const sizer = redis.client();
      const keysInRedis = await sizer.dbsize();
      sizer.disconnect();
      expect(Math.abs(Number(walked![1].replace(/,/g, '')) - keysInRedis)).toBeLessThanOrEqual(25);

      // The TTL counts down between polls and across them (the lease is fixed: no renewal).
      const ttl = row.getByTestId('ttl');
      const before = parseShownDuration(await ttl.textContent());
      expect(before).toBeGreaterThan(10_000);
      expect(before).toBeLessThanOrEqual(20_000);
      await waitFor(async () => parseShownDuration(await ttl.textContent()) < before, { what: 'the TTL shown to count down' });
      // Between polls too: with the snapshot unreachable, the banner says so and the last TTL counts
      // down on the page's own monotonic clock.
      await page.route('**/api/snapshot**', (route) => route.abort('connectionrefused'));
      await page.getByTestId('error-banner').filter({ hasText: 'Could not reach the board' }).waitFor();
      const offline = parseShownDuration(await ttl.textContent());
      await waitFor(async () => parseShownDuration(await ttl.textContent()) < offline, { what: 'the TTL to count down without a new snapshot' });
      await page.unroute('**/api/snapshot**');
      await page.getByTestId('error-banner').waitFor({ state: 'hidden' });
      // The age goes up.
      const age = parseShownDuration(await row.getByTestId('held-for').textContent());
      await waitFor(async () => parseShownDuration(await row.getByTestId('held-for').textContent()) > age, { what: 'the age shown to grow' });

      // Plain text filters to names containing it (sent as *text*).
      await page.getByTestId('filter').fill('held:orders');
      await page.getByTestId('walk-status').filter({ hasText: `*held:orders*` }).waitFor();
      await rowNamed(page, 'locks-table', name('other:billing')).waitFor({ state: 'detached' });
      await expect(row.count()).resolves.toBe(1);
      await page.getByTestId('filter').fill('');
      await rowNamed(page, 'locks-table', name('other:billing')).waitFor();

      await first.unlock();
      await first.unlock();
      await second.unlock();
      await row.waitFor({ state: 'detached' });
      await rowNamed(page, 'locks-table', name('other:billing')).waitFor({ state: 'detached' });
    });

    it("a fair lock's waiters show in line order, a semaphore its permits used and each waiter's permits; all go once released", async () => {
      const fair = worker.get(FairLockService);
      const fairName = name('fair:invoices');
      const holder = fair.getLock(fairName);
      await holder.lock({ leaseTime: 20_000 });
      cleanups.push(() => holder.forceUnlock());
      const waiterIds = async () => ((await fair.inspect(fairName)).waiters ?? []).map((waiter) => waiter.ownerId);
      const firstWaiter = fair.run(fairName, () => undefined, { waitTime: 20_000 });
      await waitFor(async () => (await waiterIds()).length === 1, { what: 'the first waiter in line' });
      const [firstId] = await waiterIds();
      const secondWaiter = fair.run(fairName, () => undefined, { waitTime: 20_000 });
      await waitFor(async () => (await waiterIds()).length === 2, { what: 'the second waiter in line' });
      const [, secondId] = await waiterIds();
      expect((await waiterIds())[0]).toBe(firstId);

      const semaphoreName = name('pool:exports');
      const semaphore = worker.get(SemaphoreService).getSemaphore(semaphoreName, { permits: 3 });
      const permit = await semaphore.acquire({ take: 2, leaseTime: 20_000 });
      cleanups.push(() => permit.release());
      const waitingPermit = semaphore.acquire({ take: 2, waitTime: 20_000 });
      await waitFor(async () => (await worker.get(SemaphoreService).inspect(semaphoreName)).waiters.length === 1, { what: 'the semaphore waiter' });

      const page = await open();
      const fairRow = rowNamed(page, 'locks-table', fairName);
      await fairRow.getByTestId('waiter').nth(1).waitFor();
      await expect(fairRow.textContent()).resolves.toContain('fair');
      const shownWaiters = await fairRow.getByTestId('waiter').allTextContents();
      expect(shownWaiters).toHaveLength(2);
      expect(shownWaiters[0]).toContain(firstId);
      expect(shownWaiters[1]).toContain(secondId);

      const semaphoreRow = rowNamed(page, 'semaphores-table', semaphoreName);
      await semaphoreRow.waitFor();
      await expect(semaphoreRow.getByTestId('permits').textContent()).resolves.toContain('2 of 3 used');
      await expect(semaphoreRow.getByTestId('holder').textContent()).resolves.toContain('2 permits');
      await expect(semaphoreRow.getByTestId('waiter').textContent()).resolves.toContain('asks 2 permits');

      // Released: the line moves on (each waiter holds, then releases) and the rows go.
      await holder.unlock();
      await Promise.all([firstWaiter, secondWaiter]);
      await permit.release();
      const second = await waitingPermit;
      await semaphoreRow.getByTestId('permits').filter({ hasText: '2 of 3 used' }).waitFor();
      await second.release();
      await fairRow.waitFor({ state: 'detached' });
      await semaphoreRow.waitFor({ state: 'detached' });
    });

    (platform === 'express' ? it : it.skip)('a long line shows its first waiters and how many more wait (waiterCount)', async () => {
      const listed = name('line:listed');
      const counted = name('line:counted');
      await holdLock(listed);
      await holdLock(counted);
      const page = await open();
      // The board lists the first 50 waiters of a line with waiterCount: here two of 20,000, and none of 7.
      await page.route('**/api/snapshot**', async (route) => {
        const response = await route.fetch();
        const snapshot = (await response.json()) as { locks: Array<{ name: string; waiters?: unknown[]; waiterCount?: number }> };
        for (const lock of snapshot.locks) {
          if (lock.name === listed) Object.assign(lock, { waiters: [{ ownerId: 'c1:1' }, { ownerId: 'c2:2' }], waiterCount: 20_000 });
          if (lock.name === counted) Object.assign(lock, { waiters: [], waiterCount: 7 });
        }
        await route.fulfill({ response, json: snapshot });
      });
      const listedRow = rowNamed(page, 'locks-table', listed);
      await listedRow.getByTestId('more-waiters').waitFor();
      await expect(listedRow.getByTestId('waiter').allTextContents()).resolves.toHaveLength(2);
      await expect(listedRow.getByTestId('more-waiters').textContent()).resolves.toBe('\u2026 and 19,998 more waiting');
      await expect(rowNamed(page, 'locks-table', counted).getByTestId('more-waiters').textContent()).resolves.toBe('7 waiting');
      // A poll may be in the handler right now: let it finish rather than fulfil a route already let go.
      await page.unrouteAll({ behavior: 'wait' });
    });

    it('hostile names show as text: markup stays text, invisible and control characters show as ⟨U+XXXX⟩', async () => {
      const markup = '<img src=x onerror=alert(1)>';
      const invisible = 'a\u200Bb\u0007c';
      // Default-ignorable (U+E0100 VARIATION SELECTOR-17: astral, zero-width), private use and unassigned
      // code points: a look-alike of invoice:42 that renders as invoice:42.
      const lookalike = name('invoice:\u{E0100}42\uE000\u{E0080}');
      await holdLock(markup);
      await holdLock(invisible);
      await holdLock(lookalike);
      const page = await open();
      const markupRow = rowNamed(page, 'locks-table', markup);
      const invisibleRow = rowNamed(page, 'locks-table', 'a⟨U+200B⟩b⟨U+0007⟩c');
      const lookalikeRow = rowNamed(page, 'locks-table', name('invoice:⟨U+E0100⟩42⟨U+E000⟩⟨U+E0080⟩'));
      await markupRow.waitFor();
      await invisibleRow.waitFor();
      await lookalikeRow.waitFor();
      await expect(markupRow.locator('th').textContent()).resolves.toBe(markup);
      await expect(invisibleRow.locator('th .cc').allTextContents()).resolves.toEqual(['U+200B', 'U+0007']);
      // One marker per code point, with all its hex digits: the surrogate pair is not split.
      await expect(lookalikeRow.locator('th .cc').allTextContents()).resolves.toEqual(['U+E0100', 'U+E000', 'U+E0080']);
      // No element came out of a name, no script ran.
      await expect(page.locator('img').count()).resolves.toBe(0);
      // The confirmation dialog names it as text too.
      await markupRow.getByTestId('force-release').click();
      const dialog = page.getByTestId('confirm-dialog');
      await dialog.waitFor();
      await expect(dialog.textContent()).resolves.toContain(markup);
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'hidden' });
      await expect(page.locator('img').count()).resolves.toBe(0);
      await expect(page.locator('[onerror]').count()).resolves.toBe(0);
    });

    it('force release is absent by default: no button, and the POST answers 404', async () => {
      const lockName = name('read-only:held');
      const lock = await holdLock(lockName);
      const page = await open(readOnly.boardUrl);
      const row = rowNamed(page, 'locks-table', lockName);
      await row.waitFor();
      await expect(page.getByTestId('force-release').count()).resolves.toBe(0);
      const response = await fetch(`${readOnly.boardUrl}/api/force-release`, {
        method: 'POST',
        headers: { ...AUTH_HEADERS, 'Content-Type': 'application/json', 'X-Lock-Board': '1' },
        body: JSON.stringify({ name: lockName, kind: 'reentrant', fencingToken: lock.getFencingToken(), ownerId: 'x:1' }),
      });
      expect(response.status).toBe(404);
      expect((await worker.get(LockService).inspect(lockName)).locked).toBe(true);
    });

    it('force release: the dialog names lock, holder and token; Confirm releases once, the status says so, the audit line names the user', async () => {
      const lockName = name('stuck:job');
      const lock = await holdLock(lockName, 30_000);
      const token = lock.getFencingToken()!;
      const { ownerId } = (await worker.get(LockService).inspect(lockName)).holders[0];
      const page = await open();
      const row = rowNamed(page, 'locks-table', lockName);
      await row.waitFor();

      // Cancel changes nothing.
      const button = row.getByRole('button', { name: `Force release ${lockName} held by ${ownerId} with token ${token}` });
      await button.click();
      const dialog = page.getByRole('dialog', { name: 'Force release?' });
      await dialog.waitFor();
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'hidden' });
      expect((await worker.get(LockService).inspect(lockName)).locked).toBe(true);

      const posted = page.waitForResponse((response) => response.url().endsWith('/api/force-release'));
      await button.click();
      await dialog.waitFor();
      const text = await dialog.textContent();
      expect(text).toContain(lockName);
      expect(text).toContain(ownerId);
      expect(text).toContain(String(token));
      await dialog.getByRole('button', { name: 'Confirm' }).click();
      expect((await posted).status()).toBe(200);
      await page.getByTestId('status').filter({ hasText: `${lockName}: released` }).waitFor();
      expect((await worker.get(LockService).inspect(lockName)).locked).toBe(false);
      await row.waitFor({ state: 'detached' });
      const audit = logs.lines.filter((line) => line.context === 'LockBoard' && line.message.includes(lockName));
      expect(audit).toHaveLength(1);
      expect(audit[0].level).toBe('log');
      expect(audit[0].message).toContain('"ops-1"');
      expect(audit[0].message).toContain(String(token));
    });

    it('force release with a stale token (the lock was taken again while the dialog was open) is refused with 409; the lock stays held', async () => {
      const lockName = name('retaken');
      const lock = await holdLock(lockName);
      const staleToken = lock.getFencingToken()!;
      const page = await open();
      const row = rowNamed(page, 'locks-table', lockName);
      await row.getByTestId('fencing-token').filter({ hasText: String(staleToken) }).waitFor();
      await row.getByTestId('force-release').click();
      const dialog = page.getByTestId('confirm-dialog');
      await dialog.waitFor();
      // Meanwhile the hold ends and a new one begins.
      await lock.unlock();
      await lock.lock({ leaseTime: 20_000 });
      const freshToken = lock.getFencingToken()!;
      expect(freshToken).toBeGreaterThan(staleToken);

      const posted = page.waitForResponse((response) => response.url().endsWith('/api/force-release'));
      await dialog.getByRole('button', { name: 'Confirm' }).click();
      expect((await posted).status()).toBe(409);
      await page.getByTestId('status').filter({ hasText: `refused: the holder no longer holds it with token ${staleToken}` }).waitFor();
      const info = await worker.get(LockService).inspect(lockName);
      expect(info.locked).toBe(true);
      expect(info.fencingToken).toBe(freshToken);
      await row.getByTestId('fencing-token').filter({ hasText: String(freshToken) }).waitFor();
      const audit = logs.lines.filter((line) => line.context === 'LockBoard' && line.message.includes(lockName));
      expect(audit.map((line) => line.level)).toEqual(['warn']);
    });

    it('a cross-origin page cannot force-release: form posts (text/plain, urlencoded) and no-cors or cors fetches are refused, the lock stays held', async () => {
      const lockName = name('target');
      const lock = await holdLock(lockName);
      const token = lock.getFencingToken()!;
      const { ownerId } = (await worker.get(LockService).inspect(lockName)).holders[0];
      const target = `${board.boardUrl}/api/force-release`;
      const json = JSON.stringify({ name: lockName, kind: 'reentrant', fencingToken: token, ownerId });
      const attr = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
      // enctype=text/plain sends "<input name>=<value>": the name holds the JSON up to a last field that swallows the "=".
      const plainName = `${json.slice(0, -1)},"pad":"`;
      const other = await startOtherOrigin({
        '/plain': `<!doctype html><form id="f" method="POST" action="${attr(target)}" enctype="text/plain"><input name="${attr(plainName)}" value='"}'></form><script>document.getElementById('f').submit()</script>`,
        '/urlencoded': `<!doctype html><form id="f" method="POST" action="${attr(target)}"><input name="name" value="${attr(lockName)}"><input name="kind" value="reentrant"><input name="fencingToken" value="${token}"><input name="ownerId" value="${attr(ownerId)}"></form><script>document.getElementById('f').submit()</script>`,
        '/fetch': `<!doctype html><title>fetching</title><script>
          const body = ${JSON.stringify(json)};
          Promise.allSettled([
            fetch(${JSON.stringify(target)}, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'Content-Type': 'text/plain' }, body }),
            fetch(${JSON.stringify(target)}, { method: 'POST', mode: 'cors', credentials: 'include', headers: { 'Content-Type': 'application/json', 'X-Lock-Board': '1' }, body }),
          ]).then((results) => { document.title = 'done ' + results.map((r) => r.status).join(' '); });
        </script>`,
      });
      cleanups.push(() => other.close());
      // A browser that passes the guard (its cookie goes to every port of the host): only the board's own checks stand in the way.
      const attacker = await authenticatedContext(browser, board.origin);
      cleanups.push(() => attacker.close());
      const page = await attacker.newPage();
      page.on('dialog', (dialog) => void dialog.dismiss());
      const statuses: number[] = [];
      page.on('response', (response) => {
        if (response.url() === target) statuses.push(response.status());
      });

      const plain = page.waitForResponse(target);
      await page.goto(`${other.origin}/plain`);
      const plainResponse = await plain;
      expect(plainResponse.status()).toBe(403);
      // Refused by the board's same-origin check, not by the guard (the cookie went along).
      expect(await plainResponse.text()).toContain('same-origin');

      const urlencoded = page.waitForResponse(target);
      await page.goto(`${other.origin}/urlencoded`);
      expect((await urlencoded).status()).toBeGreaterThanOrEqual(400);

      await page.goto(`${other.origin}/fetch`);
      await waitFor(async () => (await page.title()).startsWith('done'), { what: 'the cross-origin fetches to settle' });
      // The no-cors one reached the board and was refused; the cors one never left (its preflight has no CORS answer).
      expect(await page.title()).toBe('done fulfilled rejected');
      await waitFor(() => statuses.length >= 3, { what: 'the responses to the three posts that were sent' });
      expect(statuses.every((status) => status >= 400)).toBe(true);

      const info = await worker.get(LockService).inspect(lockName);
      expect(info.locked).toBe(true);
      expect(info.fencingToken).toBe(token);
      expect(logs.lines.filter((line) => line.context === 'LockBoard' && line.message.includes(lockName))).toEqual([]);
    });

    it('behind a reverse proxy that rewrites Host (nginx defaults), force release from the page works: Sec-Fetch-Site decides', async () => {
      const lockName = name('proxied:job');
      await holdLock(lockName);
      const proxy = await startReverseProxy(board.origin);
      cleanups.push(() => proxy.close());
      // The proxy's origin is another port of 127.0.0.1: the cookie goes along, as in a browser.
      const page = await open(`${proxy.origin}/api/lock-board`);
      const row = rowNamed(page, 'locks-table', lockName);
      await row.waitFor();
      const posted = page.waitForResponse((response) => response.url().endsWith('/api/force-release'));
      await row.getByTestId('force-release').click();
      await page.getByTestId('confirm-dialog').getByRole('button', { name: 'Confirm' }).click();
      expect((await posted).status()).toBe(200);
      await page.getByTestId('status').filter({ hasText: `${lockName}: released` }).waitFor();
      expect((await worker.get(LockService).inspect(lockName)).locked).toBe(false);
    });

    it('axe-core finds no serious or critical violation with locks, semaphores and contention on the page (light and dark)', async () => {
      // Locks with a holder, a fair line, a semaphore with a waiter, and contention counted by the board's own instance.
      await holdLock(name('axe:reentrant'));
      const fair = worker.get(FairLockService).getLock(name('axe:fair'));
      await fair.lock({ leaseTime: 20_000 });
      const queued = worker.get(FairLockService).run(name('axe:fair'), () => undefined, { waitTime: 20_000 }).catch(() => undefined);
      // Released first, then the waiter (which then holds and releases) is awaited.
      cleanups.push(async () => {
        await fair.forceUnlock();
        await queued;
      });
      const semaphore = worker.get(SemaphoreService).getSemaphore(name('axe:pool'), { permits: 2 });
      const permit = await semaphore.acquire({ take: 2, leaseTime: 20_000 });
      cleanups.push(() => permit.release());
      const busy = board.app.get(LockService);
      await busy.run(name('axe:reentrant'), () => undefined, { skipIfLocked: true });
      await busy.getLock(name('axe:reentrant')).tryLock({ waitTime: 50 });

      for (const colorScheme of ['light', 'dark'] as const) {
        // The board's CSP admits no script but its own: this context alone bypasses it, to inject axe.
        const axeContext = await authenticatedContext(browser, board.origin, { bypassCSP: true, colorScheme });
        cleanups.push(() => axeContext.close());
        const page = await open(board.boardUrl, axeContext);
        await rowNamed(page, 'locks-table', name('axe:fair')).getByTestId('waiter').waitFor();
        await rowNamed(page, 'semaphores-table', name('axe:pool')).waitFor();
        await rowNamed(page, 'contention', name('axe:reentrant')).waitFor();
        await page.getByTestId('force-release').first().waitFor();
        await page.addScriptTag({ path: require.resolve('axe-core/axe.min.js') });
        const violations = await page.evaluate(async () => {
          const results = await (globalThis as unknown as { axe: { run(): Promise<{ violations: Array<{ id: string; impact: string; help: string; nodes: Array<{ target: unknown }> }> }> } }).axe.run();
          return results.violations.map(({ id, impact, help, nodes }) => ({ id, impact, help, targets: nodes.map((node) => node.target) }));
        });
        expect({ colorScheme, serious: violations.filter((v) => v.impact === 'serious' || v.impact === 'critical') }).toEqual({ colorScheme, serious: [] });
      }
    });
  });
});
