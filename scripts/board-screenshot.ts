/**
 * Takes the lock board's screenshot for the docs (docs/images/lock-board.png, 1280x800): a Redis of
 * its own, a worker instance holding a few locks (a fair lock with a line, a read-write lock, a
 * semaphore with a waiter), the board app counting some contention, and Debian's Chromium through
 * playwright-core.
 *
 *   npx ts-node --transpile-only scripts/board-screenshot.ts [out.png] [--dark]
 */
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Lock, Permit } from '../lib';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const out = args.find((arg) => !arg.startsWith('--')) ?? join(__dirname, '..', 'docs', 'images', 'lock-board.png');
  const colorScheme = args.includes('--dark') ? 'dark' : 'light';
  // The page's assets reach the app through a generated module: refresh it before the library loads.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require('./generate-lua').generate();
  const { FairLockService, LockService, ReadWriteLockService, SemaphoreService } = await import('../lib');
  const { startRedis } = await import('../test/support/redis-server');
  const { waitFor } = await import('../test/support/wait-for');
  const { authenticatedContext, launchChromium, rowNamed, startBoardApp, startWorker } = await import('../test/board/browser-support');
  const redis = await startRedis();
  const worker = await startWorker({ redis: redis.url, clientName: 'orders-worker' });
  const board = await startBoardApp('express', { redis: redis.url, clientName: 'ops-api' }, { allowForceRelease: true, refreshMs: 500 });
  const browser = await launchChromium();
  const pending: Array<Promise<unknown>> = [];
  const held: Array<Lock | Permit> = [];
  try {
    const locks = worker.get(LockService);
    const fair = worker.get(FairLockService);
    const readWrite = worker.get(ReadWriteLockService);
    const semaphores = worker.get(SemaphoreService);

    const order = locks.getLock('order:1042');
    await order.lock({ leaseTime: 60_000 });
    await order.lock({ leaseTime: 60_000 });
    held.push(order);
    const catalog = readWrite.getReadWriteLock('catalog:sync').writeLock();
    await catalog.lock();
    held.push(catalog);
    const invoices = fair.getLock('invoice:run');
    await invoices.lock();
    held.push(invoices);
    for (let i = 1; i <= 2; i++) {
      pending.push(fair.run('invoice:run', () => undefined, { waitTime: 120_000 }).catch(() => undefined));
      await waitFor(async () => ((await fair.inspect('invoice:run')).waiters ?? []).length === i, { what: `waiter ${i}` });
    }
    const exports = semaphores.getSemaphore('exports', { permits: 5 });
    held.push(await exports.acquire({ take: 3 }));
    pending.push(exports.acquire({ take: 3, waitTime: 120_000 }).then((permit) => permit.release()).catch(() => undefined));
    await waitFor(async () => (await semaphores.inspect('exports')).waiters.length === 1, { what: 'the semaphore waiter' });

    const context = await authenticatedContext(browser, board.origin, { colorScheme, deviceScaleFactor: 1 });
    const page = await context.newPage();
    await page.goto(board.boardUrl);
    await rowNamed(page, 'locks-table', 'invoice:run').getByTestId('waiter').nth(1).waitFor();

    // Contention, counted by the board app's own instance, spread over a few refreshes.
    const busy = board.app.get(LockService);
    for (let round = 0; round < 14; round++) {
      const tries = 1 + (round % 4);
      for (let i = 0; i < tries; i++) await busy.run('order:1042', () => undefined, { skipIfLocked: true });
      if (round % 3 === 0) await board.app.get(ReadWriteLockService).getReadWriteLock('catalog:sync').writeLock().tryLock({ waitTime: 40 + 20 * (round % 5) });
      if (round % 2 === 1) await board.app.get(FairLockService).getLock('invoice:run').tryLock({ waitTime: 30 });
      await sleep(550);
    }
    await rowNamed(page, 'contention', 'order:1042').waitFor();
    await sleep(1_200);
    mkdirSync(dirname(out), { recursive: true });
    await page.screenshot({ path: out });
    console.log(`wrote ${out}`);
    await context.close();
  } finally {
    for (const hold of held.reverse()) {
      if ('release' in hold) await hold.release().catch(() => undefined);
      else await hold.forceUnlock().catch(() => undefined);
    }
    await Promise.all(pending);
    await browser.close();
    await board.app.close();
    await worker.close();
    await redis.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
