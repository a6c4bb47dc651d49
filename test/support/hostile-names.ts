import type { TestingModule } from '@nestjs/testing';
import { FairLockService, type Lock, type LockModuleOptions, LockService, type Permit, ReadWriteLockService, SemaphoreService } from '../../lib';
import { createLockApp, waitersQueued } from './lock-app';

/**
 * Names an attacker could send around a victim name: the old layout's aliases (`{v}`, `~}v`), its
 * squatters on the victim's bookkeeping keys (`{v}:line`, `sem:{v}`, `rw:{v}`...), the escape
 * character and its codes, unicode, lone surrogates and empty segments.
 */
export function hostileNamesAround(victim: string): string[] {
  const names = [
    `{${victim}}`,
    `}${victim}`,
    `~}${victim}`,
    `~${victim}`,
    `{~}${victim}}`,
    `{${victim}}:line`,
    `{${victim}}:deadlines`,
    `{${victim}}:fence`,
    `{${victim}}:leases`,
    `{${victim}}:channel`,
    `{${victim}}:channel:owner`,
    `{${victim}}:rq:1`,
    `sem:{${victim}}`,
    `sem:{${victim}}:leases`,
    `rw:{${victim}}`,
    `rw:{${victim}}:leases`,
    `${victim}}`,
    `{${victim}`,
    `{}${victim}`,
    `${victim}{}`,
    `{${victim}}{${victim}}`,
    `%7B${victim}%7D`,
    `${victim}%`,
    `%${victim}`,
    `${victim}%7D`,
    `é{${victim}}😀`,
    `:${victim}:`,
    `${victim}::`,
    `{${victim}}}`,
    // Lone surrogates: sent as UTF-8, each would become U+FFFD, so these three would be one key.
    `${victim}\uD800`,
    `${victim}\uD801`,
    `${victim}\uFFFD`,
    `{${victim}\uDC00}`,
  ];
  return [...new Set(names)].filter((name) => name !== victim);
}

/** A hold of some kind on a hostile name, released at the end. */
interface HostileHold {
  release(): Promise<void>;
  stillHeld(): Promise<boolean>;
}

/** Every wait here is bounded: a step that cannot happen fails the test instead of hanging it. */
const WAIT_MS = 5_000;

type HostileKind = 'plain' | 'fair' | 'read' | 'write' | 'semaphore' | 'multi';
export const HOSTILE_KINDS: readonly HostileKind[] = ['plain', 'fair', 'read', 'write', 'semaphore', 'multi'];

async function holdAll(app: TestingModule, kind: HostileKind, names: readonly string[]): Promise<HostileHold[]> {
  const lockHold = async (lock: Lock): Promise<HostileHold> => {
    // Bounded: with aliasing names (the old layout) a hold would wait for another forever.
    expect(await lock.tryLock({ waitTime: WAIT_MS })).toBe(true);
    return { release: () => lock.unlock(), stillHeld: () => lock.isHeldByCurrentOwner() };
  };
  const rw = (name: string) => app.get(ReadWriteLockService).getReadWriteLock(name);
  switch (kind) {
    case 'plain':
      return Promise.all(names.map((name) => lockHold(app.get(LockService).getLock(name))));
    case 'fair':
      return Promise.all(names.map((name) => lockHold(app.get(FairLockService).getLock(name))));
    case 'read':
      return Promise.all(names.map((name) => lockHold(rw(name).readLock())));
    case 'write':
      return Promise.all(names.map((name) => lockHold(rw(name).writeLock())));
    case 'semaphore':
      return Promise.all(
        names.map(async (name) => {
          const semaphore = app.get(SemaphoreService).getSemaphore(name, { permits: 1 });
          const permit: Permit = await semaphore.acquire({ waitTime: WAIT_MS });
          return { release: () => permit.release(), stillHeld: async () => (await semaphore.availablePermits()) === 0 };
        }),
      );
    case 'multi': {
      const locks = app.get(LockService);
      const members = names.map((name, i) => (i % 3 === 0 ? locks.getLock(name) : i % 3 === 1 ? app.get(FairLockService).getLock(name) : rw(name).writeLock()));
      return [await lockHold(locks.getMultiLock(...members))];
    }
  }
}

/**
 * The victim's locks of every kind behave as on a clean server: exclusion between two module
 * instances for the plain, fair, read-write kinds and a multi-lock; a semaphore's limit; fair order.
 * Every step fails loudly (WRONGTYPE would surface as LockUnavailableError).
 */
async function victimBehavesAsOnACleanServer(a: TestingModule, b: TestingModule, victim: string): Promise<void> {
  // Plain and fair are one lock: each excludes the other, across instances.
  const plain = a.get(LockService).getLock(victim);
  expect(await plain.tryLock({ waitTime: WAIT_MS })).toBe(true);
  expect(await b.get(LockService).getLock(victim).tryLock({ waitTime: 0 })).toBe(false);
  expect(await b.get(FairLockService).getLock(victim).tryLock({ waitTime: 0 })).toBe(false);
  expect(await b.get(LockService).getLock(victim).isLocked()).toBe(true);
  await plain.unlock();
  const after = b.get(LockService).getLock(victim);
  expect(await after.tryLock({ waitTime: 0 })).toBe(true);
  await after.unlock();

  // Read-write: a writer excludes readers and writers; readers share.
  const writer = a.get(ReadWriteLockService).getReadWriteLock(victim).writeLock();
  expect(await writer.tryLock({ waitTime: WAIT_MS })).toBe(true);
  expect(await b.get(ReadWriteLockService).getReadWriteLock(victim).readLock().tryLock({ waitTime: 0 })).toBe(false);
  await writer.unlock();
  const readerA = a.get(ReadWriteLockService).getReadWriteLock(victim).readLock();
  const readerB = b.get(ReadWriteLockService).getReadWriteLock(victim).readLock();
  expect(await readerA.tryLock({ waitTime: 0 })).toBe(true);
  expect(await readerB.tryLock({ waitTime: 0 })).toBe(true);
  expect(await b.get(ReadWriteLockService).getReadWriteLock(victim).writeLock().tryLock({ waitTime: 0 })).toBe(false);
  await readerA.unlock();
  await readerB.unlock();

  // Semaphore: exactly its limit across instances.
  const semaphoreA = a.get(SemaphoreService).getSemaphore(victim, { permits: 2 });
  const semaphoreB = b.get(SemaphoreService).getSemaphore(victim, { permits: 2 });
  const first = await semaphoreA.acquire({ waitTime: WAIT_MS });
  const second = await semaphoreB.acquire({ waitTime: WAIT_MS });
  expect(await semaphoreA.tryAcquire()).toBeNull();
  expect(await semaphoreB.tryAcquire()).toBeNull();
  expect(await semaphoreA.availablePermits()).toBe(0);
  await first.release();
  await second.release();
  expect(await semaphoreB.availablePermits()).toBe(2);

  // Fair order: waiters are served in the order they queued; nobody barges in ahead of the line.
  const holder = a.get(FairLockService).getLock(victim);
  expect(await holder.tryLock({ waitTime: WAIT_MS })).toBe(true);
  const served: string[] = [];
  const w1 = b.get(FairLockService).getLock(victim);
  const w1Held = w1.tryLock({ waitTime: 2 * WAIT_MS }).then((held) => served.push(held ? 'w1' : 'w1 timed out'));
  await waitersQueued(b, 1);
  const w2 = b.get(FairLockService).getLock(victim);
  const w2Held = w2.tryLock({ waitTime: 3 * WAIT_MS }).then((held) => served.push(held ? 'w2' : 'w2 timed out'));
  await waitersQueued(b, 2);
  await holder.unlock();
  await w1Held;
  expect(await a.get(FairLockService).getLock(victim).tryLock({ waitTime: 0 })).toBe(false);
  expect(served).toEqual(['w1']);
  await w1.unlock();
  await w2Held;
  expect(served).toEqual(['w1', 'w2']);
  await w2.unlock();

  // A multi-lock over the victim's plain and write locks: all or nothing, and it excludes.
  const locks = a.get(LockService);
  const multi = locks.getMultiLock(locks.getLock(victim), a.get(ReadWriteLockService).getReadWriteLock(victim).writeLock());
  expect(await multi.tryLock({ waitTime: WAIT_MS })).toBe(true);
  expect(await b.get(LockService).getLock(victim).tryLock({ waitTime: 0 })).toBe(false);
  expect(await b.get(ReadWriteLockService).getReadWriteLock(victim).readLock().tryLock({ waitTime: 0 })).toBe(false);
  await multi.unlock();
  expect(await b.get(LockService).getLock(victim).isLocked()).toBe(false);
}

/**
 * For every kind: hostile names around each victim are held by a third module instance; the
 * victims behave as on a clean server while they are held and after they are released, and the
 * hostile holds themselves are untouched by the victims' traffic.
 */
export function describeHostileNames(topology: string, start: () => Promise<{ options: () => LockModuleOptions; stop(): Promise<void> }>): void {
  describe(`hostile names (${topology})`, () => {
    let server: { options: () => LockModuleOptions; stop(): Promise<void> };
    let a: TestingModule;
    let b: TestingModule;
    let attacker: TestingModule;

    beforeAll(async () => {
      server = await start();
      a = await createLockApp(server.options());
      b = await createLockApp(server.options());
      attacker = await createLockApp(server.options());
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
      await attacker?.close();
      await server?.stop();
    });

    it.each(HOSTILE_KINDS)('names held as %s locks reach none of the victims\' locks', async (kind) => {
      for (const victim of ['42', 'x', '}abc', `v-${kind}`]) {
        const holds = await holdAll(attacker, kind, hostileNamesAround(victim));
        try {
          await victimBehavesAsOnACleanServer(a, b, victim);
          for (const hold of holds) expect(await hold.stillHeld()).toBe(true);
        } finally {
          for (const hold of holds) await hold.release();
        }
        await victimBehavesAsOnACleanServer(a, b, victim);
      }
    });
  });
}
