import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Test, TestingModule } from '@nestjs/testing';
import { LockService, LockTimeoutError } from '../lib';
import { LockTestingControls, LockTestingModule } from '../lib/testing';

const root = join(__dirname, '..');

/** Runs a command in the repository, resolving its exit code and output (killed after `timeoutMs`: a hang fails). */
function run(command: string, args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, env: { ...process.env, FORCE_COLOR: '0' } });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('testing kit: Jest fake timers move leases and waits', () => {
  let moduleRef: TestingModule;
  beforeEach(async () => {
    jest.useFakeTimers();
    moduleRef = await Test.createTestingModule({ imports: [LockTestingModule.forRoot()] }).compile();
    await moduleRef.init();
  });
  afterEach(async () => {
    await moduleRef.close();
    jest.useRealTimers();
  });

  it('a 10 s wait times out after 10 s of fake time, with no real 10 s spent', async () => {
    const started = jest.getRealSystemTime();
    await moduleRef.get(LockTestingControls).holdElsewhere('job');
    const fn = jest.fn(async () => 'ran');
    let settled = false;
    const outcome = moduleRef
      .get(LockService)
      .run('job', fn, { waitTime: 10_000 })
      .catch((e: unknown) => e)
      .finally(() => (settled = true));
    await jest.advanceTimersByTimeAsync(9_990);
    expect(settled).toBe(false);
    await jest.advanceTimersByTimeAsync(20);
    expect(await outcome).toBeInstanceOf(LockTimeoutError);
    expect(fn).not.toHaveBeenCalled();
    expect(jest.getRealSystemTime() - started).toBeLessThan(5_000);
  });

  it('a leaseTime hold ends when fake time passes its lease', async () => {
    const locks = moduleRef.get(LockService);
    await locks.getLock('leased').lock({ leaseTime: 60_000 });
    await jest.advanceTimersByTimeAsync(59_000);
    expect(await locks.getLock('leased').isLocked()).toBe(true);
    await jest.advanceTimersByTimeAsync(1_001);
    expect(await locks.getLock('leased').isLocked()).toBe(false);
  });

  it('the watchdog keeps a lock without leaseTime for fake minutes, and its signal stays quiet', async () => {
    const locks = moduleRef.get(LockService);
    const lock = locks.getLock('kept');
    await lock.lock();
    await jest.advanceTimersByTimeAsync(5 * 60_000);
    expect(await lock.isLocked()).toBe(true);
    expect(await locks.getLock('kept').tryLock()).toBe(false);
    await lock.unlock();
  });
});

describe('testing kit: no handle left, node:test mock timers', () => {
  it('a Jest run using the kit exits by itself and --detectOpenHandles reports nothing', async () => {
    const { code, output } = await run(
      process.execPath,
      [
        join(root, 'node_modules', 'jest', 'bin', 'jest.js'),
        '--detectOpenHandles',
        '--testMatch',
        '**/test/fixtures/kit-open-handles.fixture.ts',
      ],
      120_000,
    );
    expect(output).toMatch(/Tests:\s+2 passed/);
    expect(output).not.toMatch(/open handle|did not exit/i);
    expect(code).toBe(0);
  }, 130_000);

  it('node --test with mock timers: a 10 s wait times out after 10 s of mock time', async () => {
    const { code, output } = await run(
      process.execPath,
      ['--require', 'ts-node/register/transpile-only', '--test', join('test', 'fixtures', 'kit-node-test.ts')],
      120_000,
    );
    expect(output).toMatch(/# pass 1/);
    expect(code).toBe(0);
  }, 130_000);
});
