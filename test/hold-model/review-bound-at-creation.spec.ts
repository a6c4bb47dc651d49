import type { TestingModule } from '@nestjs/testing';
import { LockService, ReadWriteLockService, type Lock, type LockRunContext } from '../../lib';
import { createLockApp, deferred } from '../support/lock-app';
import { OverlapProbe } from '../support/overlap-probe';
import { startRedis } from '../support/redis-server';
import { settled } from '../support/hold-handles';

/**
 * Review of the owner model (issue 41 b, DESIGN §24): "A lock object made inside a body re-enters that
 * body's hold only while the body runs and its hold is current, decided when the object asks".
 * The review found these kinds taking the body's owner when the object was *made*: layout
 * 'redisson' getReadWriteLock, and getRedLock; both now go through the chain binding
 * (lib/locks/chain-bound-lock.ts).
 * Timer 1 re-enters through the object while the body runs and stays inside past the body's end;
 * timer 2 asks through the same object after the body ended: it must wait, not enter beside timer 1.
 */
interface Case {
  label: string;
  options: (url: string) => Record<string, unknown>;
  run: (app: TestingModule, name: string, fn: (c: LockRunContext) => Promise<void>) => Promise<unknown>;
  make: (app: TestingModule, name: string) => Lock;
}

const CASES: Case[] = [
  {
    label: "layout 'redisson' write view",
    options: () => ({ layout: 'redisson' }),
    run: (app, name, fn) => app.get(ReadWriteLockService).runWrite(name, fn),
    make: (app, name) => app.get(ReadWriteLockService).getReadWriteLock(name).writeLock(),
  },
  {
    label: "layout 'redisson' plain lock (control: decided when asked)",
    options: () => ({ layout: 'redisson' }),
    run: (app, name, fn) => app.get(LockService).run(name, fn),
    make: (app, name) => app.get(LockService).getLock(name),
  },
  {
    label: 'RedLock (runRedLock + getRedLock)',
    options: (url) => ({ redlock: { clients: [url], masterTimeout: 1_000 } }),
    run: (app, name, fn) => app.get(LockService).runRedLock(name, fn),
    make: (app, name) => app.get(LockService).getRedLock(name),
  },
];

describe('review: lock objects bound when made, used by sibling continuations after the body', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it.each(CASES)('$label: a second timer through an object made in the body waits for the first', async ({ options, run, make }) => {
    const app = await createLockApp({ redis: redis.url, watchdogTimeout: 600, ...options(redis.url) } as never);
    const other = await createLockApp({ redis: redis.url, watchdogTimeout: 600, ...options(redis.url) } as never);
    const name = `review-created-${Math.random().toString(36).slice(2)}`;
    const probe = new OverlapProbe();
    const bodyEnded = deferred();
    const firstInside = deferred();
    let object!: Lock;
    let first!: Promise<string>;
    let second!: Promise<boolean>;
    try {
      await run(app, name, async () => {
        object = make(app, name);
        first = new Promise<void>((resolve) => setTimeout(resolve, 0)).then(async () => {
          await object.lock();
          firstInside.resolve();
          await probe.enter(name, 'timer 1');
          return settled(object.unlock());
        });
        second = bodyEnded.promise.then(async () => {
          const got = await object.tryLock({ waitTime: 300 });
          if (got) void probe.enter(name, 'timer 2');
          return got;
        });
        await firstInside.promise;
      });
      bodyEnded.resolve();
      const secondGot = await second;
      const otherLock = make(other, name);
      const otherGot = await otherLock.tryLock({ waitTime: 0 });
      if (otherGot) await otherLock.unlock().catch(() => undefined);
      const maxInside = probe.maxInside(name);
      expect({ secondGot, maxInside, otherGot }).toEqual({ secondGot: false, maxInside: 1, otherGot: false });
    } finally {
      probe.holding = false;
      for (const { leave } of probe.entered) leave();
      bodyEnded.resolve();
      await Promise.allSettled([first, second]);
      await other.close();
      await app.close();
    }
  });
});
