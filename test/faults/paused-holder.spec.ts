import type { ChildProcess } from 'node:child_process';
import type { TestingModule } from '@nestjs/testing';
import type Redis from 'ioredis';
import { LockService } from '../../lib';
import { FencedStore } from '../../sample-app/src/fencing/fenced-store';
import { spawnFixture } from '../support/child-process';
import { createLockApp, waitUntil } from '../support/lock-app';
import { RestartableRedis } from '../support/restartable-redis';

const WATCHDOG = 900; // lease 900 ms, renewed every 300 ms

/** Collects a child's stdout lines; `line(prefix)` resolves with the first line that starts with it. */
function lines(child: ChildProcess): { line(prefix: string, timeoutMs?: number): Promise<string>; all: string[] } {
  const all: string[] = [];
  let buffer = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffer += chunk;
    const parts = buffer.split('\n');
    buffer = parts.pop() ?? '';
    all.push(...parts);
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk));
  return {
    all,
    async line(prefix, timeoutMs = 15_000) {
      await waitUntil(() => all.some((l) => l.startsWith(prefix)) || child.exitCode !== null, timeoutMs).catch(() => undefined);
      const found = all.find((l) => l.startsWith(prefix));
      if (!found) throw new Error(`child never printed "${prefix}": ${all.join(' | ')} ${stderr}`);
      return found;
    },
  };
}

/**
 * A holder whose process stops (SIGSTOP) or stalls (a synchronous loop) past its lease: another
 * process takes the lock meanwhile; once the old holder runs again its signal aborts within one
 * watchdog round, its fenced write with the old token is refused, and its release leaves the new
 * owner's hold alone.
 */
describe('faults: a holder paused past its lease', () => {
  let redis: RestartableRedis;
  let app: TestingModule;
  let raw: Redis;
  let store: FencedStore;
  let counter = 0;
  const fresh = () => `paused-${++counter}`;

  beforeAll(async () => {
    redis = await RestartableRedis.start();
    app = await createLockApp({ redis: redis.url });
    raw = redis.client();
    store = new FencedStore(raw);
  });
  afterAll(async () => {
    await app?.close();
    await redis?.dispose();
  });

  it.each([
    ['stopped with SIGSTOP', 'sigstop'],
    ['stalled by a synchronous loop', 'stall'],
  ])('%s', async (_title, mode) => {
    const name = fresh();
    const child = spawnFixture('paused-holder', [redis.url, name, String(WATCHDOG), mode, '2500']);
    const out = lines(child);
    try {
      const oldToken = Number((await out.line('held ')).split(' ')[1]);
      expect(Number.isSafeInteger(oldToken)).toBe(true);

      if (mode === 'sigstop') child.kill('SIGSTOP');
      else child.kill('SIGUSR2');
      // Another process takes the lock once the paused holder's lease has run out.
      const lock = app.get(LockService).getLock(name);
      expect(await lock.tryLock({ waitTime: 10_000 })).toBe(true);
      const newToken = lock.getFencingToken()!;
      expect(newToken).toBeGreaterThan(oldToken);
      expect(await store.write(`record:${name}`, { writer: 'parent' }, newToken)).toBe(true);
      if (mode === 'sigstop') child.kill('SIGCONT');

      // Within one watchdog round (300 ms) after it runs again, plus generous slack.
      const lostAfter = Number((await out.line('lost ')).split(' ')[1]);
      expect(lostAfter).toBeLessThan(WATCHDOG / 3 + 1_500);
      expect(await out.line('write ')).toBe('write refused');
      expect(await out.line(`warn Lock "${name}" was lost`)).toContain('its lease ran out');
      expect(await out.line(`warn Lock "${name}" was already gone`)).toContain('when its holder released it');
      await out.line('done');
      // The new owner's hold and write are untouched.
      expect(await lock.getHoldCount()).toBe(1);
      expect(await raw.hget(`record:${name}`, 'writer')).toBe('parent');
      await lock.unlock();
    } finally {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
  });
});
