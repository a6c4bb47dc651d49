import type { Lock } from '../../lib';
import { printed, spawnFixture } from './child-process';
import { waitUntil } from './lock-app';

/**
 * A waiter handed the lock that died before hearing of it: `test/fixtures/hot-loop.ts` waits in
 * line in a child process (`fixtureArgs`), is stopped (SIGSTOP), a second waiter (`next`) queues
 * behind it, the holder releases (`release`: the lock is handed to the stopped child, which
 * `handedToChild` checks) and the child is killed. Resolves with the ms from the release until
 * `next` held the lock; rejects when it never did.
 */
export async function deadGranteeDelay(scenario: {
  fixtureArgs: string[];
  lineLength(): Promise<number>;
  next: Lock;
  release(): Promise<void>;
  handedToChild(): Promise<void>;
}): Promise<number> {
  const { fixtureArgs, lineLength, next, release, handedToChild } = scenario;
  const child = spawnFixture('hot-loop', fixtureArgs);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    await printed(child, 'asking');
    await waitUntil(async () => (await lineLength()) === 1, 20_000);
    child.kill('SIGSTOP');
    const nextAcquired = next.tryLock({ waitTime: 15_000 });
    await waitUntil(async () => (await lineLength()) === 2);
    await release();
    const releasedAt = Date.now();
    await handedToChild();
    child.kill('SIGKILL');
    if (!(await nextAcquired)) throw new Error('the next waiter never got the lock');
    const delay = Date.now() - releasedAt;
    await next.unlock();
    return delay;
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
}
