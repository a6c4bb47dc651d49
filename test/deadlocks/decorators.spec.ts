import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { DistributedLock, LockDeadlockError, ReadLock, ReadWriteLockService, WriteLock } from '../../lib';
import { createLockApp } from '../support/lock-app';
import { startRedis, TestRedis } from '../support/redis-server';
import { inLine } from '../support/deadlock-parties';

/** Lets a test hold a decorated body open until it says so. */
class Hooks {
  private heldNow!: () => void;
  readonly held = new Promise<void>((resolve) => (this.heldNow = resolve));
  private goNow!: () => void;
  readonly mayGoOn = new Promise<void>((resolve) => (this.goNow = resolve));
  enter(): void {
    this.heldNow();
  }
  go(): void {
    this.goNow();
  }
}

@Injectable()
class Chains {
  readonly rwOutside: ReturnType<ReadWriteLockService['getReadWriteLock']>;
  constructor(private readonly rw: ReadWriteLockService) {
    this.rwOutside = rw.getReadWriteLock('dl-dec:doc');
  }

  @DistributedLock('#first', { waitTime: 20_000 })
  async nested(first: string, second: string, hooks: Hooks): Promise<string> {
    hooks.enter();
    await hooks.mayGoOn;
    return this.inner(second);
  }

  @DistributedLock('#name', { waitTime: 20_000 })
  async inner(name: string): Promise<string> {
    return `inner ${name}`;
  }

  /** The nested read of the docs: inside @ReadLock, a read through a service field (another owner). */
  @ReadLock('dl-dec:doc', { waitTime: 20_000 })
  async readThenReadThroughField(hooks: Hooks): Promise<string> {
    hooks.enter();
    await hooks.mayGoOn;
    const read = this.rwOutside.readLock();
    if (!(await read.tryLock({ waitTime: 20_000 }))) return 'inner read timed out';
    await read.unlock();
    return 'inner read taken';
  }

  @WriteLock('dl-dec:doc', { waitTime: 20_000 })
  async write(): Promise<string> {
    return 'written';
  }
}

/** Edges come from decorated methods' call chains as from run() (docs/deadlocks.md "The wait-for graph"). */
describe('deadlocks: decorated methods', () => {
  let redis: TestRedis;
  let app: TestingModule;

  beforeAll(async () => {
    redis = await startRedis();
    app = await createLockApp({ redis: redis.url, deadlockCheckAfter: 0 }, [Chains]);
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('@DistributedLock a -> b and b -> a: the closing call is refused at once with LockDeadlockError, the other returns', async () => {
    const chains = app.get(Chains);
    const [a, b] = ['dl-dec:a', 'dl-dec:b'];
    const hx = new Hooks();
    const hy = new Hooks();
    const x = chains.nested(a, b, hx);
    await hx.held;
    const y = chains.nested(b, a, hy).then(
      (value) => ({ value }),
      (error: unknown) => ({ error, at: Date.now() }),
    );
    await hy.held;
    hx.go();
    await inLine(app, 'plain', b, 1);
    const closedAt = Date.now();
    hy.go();
    const yOutcome = (await y) as { error?: unknown; at?: number; value?: string };
    expect(yOutcome.error).toBeInstanceOf(LockDeadlockError);
    expect((yOutcome.at as number) - closedAt).toBeLessThan(2_000);
    expect([...(yOutcome.error as LockDeadlockError).lockName].sort()).toEqual([a, b]);
    await expect(x).resolves.toBe(`inner ${b}`);
  }, 60_000);

  it('@ReadLock whose body reads through a service field behind a @WriteLock caller: the inner read is refused, the writer then writes', async () => {
    const chains = app.get(Chains);
    const hooks = new Hooks();
    const reader = chains.readThenReadThroughField(hooks).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    await hooks.held;
    const writer = chains.write();
    await inLine(app, 'read-write', 'dl-dec:doc', 1);
    hooks.go();
    const read = (await reader) as { value?: string; error?: unknown };
    expect(read.error).toBeInstanceOf(LockDeadlockError);
    expect((read.error as LockDeadlockError).lockName).toEqual(['dl-dec:doc']);
    await expect(writer).resolves.toBe('written');
  }, 60_000);
});
