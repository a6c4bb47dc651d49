/**
 * What one uncontended locked call costs Redis, counted in CPU instructions (issue 44): redis-server
 * runs under valgrind's callgrind, and each subject's window of sequential calls on names never used
 * before is counted alone (`callgrind_control -z` before, `-d` after). Instruction counts do not
 * depend on what else the machine runs, so subjects compare exactly, and one guarantee's price is
 * the difference between this library's scripts with and without the commands that keep it.
 *
 *   npx tsc -p bench/tsconfig.json && node dist/bench/profiles/redis-instructions.js [calls]
 *
 * Needs `valgrind` (Debian's package). Default 400 calls per subject after 100 of warm-up. Two parts:
 * - the libraries as their adapters run them (bench/adapters: what each sends, as it sends it);
 * - this library's two scripts (`reentrant-first-attempt`, `reentrant-release`), sent directly with
 *   the keys and arguments `LockService.run` sends, whole and without one guarantee's commands.
 */
import { ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { sleep } from '../harness/clock';
import { LUA_SOURCES } from '../../lib/redis/lua-sources.generated';

const WARMUP = 100;
const OWNER = 'a3b9c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d:1';

interface Subject {
  readonly label: string;
  /** One call on the name `name` (never used before). */
  prepare(url: string, client: Redis): Promise<(name: string) => Promise<unknown>>;
  close?(): Promise<void>;
}

/** A library through its bench adapter (`run(key, fn)` with an empty body). */
function adapterSubject(id: string, label: string): Subject {
  let close: (() => Promise<void>) | undefined;
  return {
    label,
    async prepare(url) {
      const { adapterSpec } = await import('../adapters');
      const adapter = await adapterSpec(id).create(url);
      close = () => adapter.close();
      return (name) => adapter.run(name, async () => undefined);
    },
    close: () => close?.() ?? Promise.resolve(),
  };
}

const FIRST_ATTEMPT = LUA_SOURCES['reentrant-first-attempt'];
const RELEASE = LUA_SOURCES['reentrant-release'];

/** `source` with every `text` replaced, which must be there: a variant that no longer matches its script fails loudly. */
function without(source: string, text: string, instead = ''): string {
  if (!source.includes(text)) throw new Error(`the script no longer contains: ${text}`);
  return source.split(text).join(instead);
}

/**
 * This library's two scripts sent directly, as `LockService.run` sends them (keys and arguments of
 * lib/locks/reentrant-lock.ts), in the versions given.
 */
function scriptSubject(label: string, firstAttempt: string, release: string): Subject {
  return {
    label,
    async prepare(_url, client) {
      const acquire = (await client.script('LOAD', firstAttempt)) as string;
      const releaseSha = (await client.script('LOAD', release)) as string;
      return async (name) => {
        const key = `lock:{${name}}`;
        const line = [`${key}:line`, `${key}:deadlines`, `${key}:seen`, `${key}:fence`];
        const reply = (await client.evalsha(acquire, 5, key, line[0], line[3], line[1], line[2], '30000', OWNER, `rq${name}`, '1000', 'publish', 'one', '5000', '')) as [number] | number;
        const token = Array.isArray(reply) ? String(reply[0]) : '';
        await client.evalsha(releaseSha, 6, key, `${key}:rls:${OWNER}:rq${name}`, ...line, OWNER, '10000', 'publish', 'one', '', '5000', '1000', token);
      };
    },
  };
}

/** Two scripts that do nothing, with the same keys and arguments: what calling them costs. */
const EMPTY_SCRIPTS = 'return { 1 }';

function subjects(): Subject[] {
  const fenceCommands = "local last = tonumber(redis.call('set', fenceKey, tokenText, 'px', fenceMemoryMs, 'get')) or 0";
  return [
    adapterSubject('ours-run', 'ours, LockService.run'),
    adapterSubject('semaphore', 'redis-semaphore Mutex'),
    adapterSubject('redlock-default', '@sesamecare-oss/redlock'),
    adapterSubject('ours-run-redisson', "ours, LockService.run, layout 'redisson' (Redisson's scripts)"),
    scriptSubject('ours: the two scripts, sent directly', FIRST_ATTEMPT, RELEASE),
    scriptSubject('  without the release record (a resent release answers as its first run)', FIRST_ATTEMPT, without(RELEASE, "  redis.call('set', recordKey, outcome, 'px', recordTtlMs)")),
    scriptSubject('  without the fence key (a token above every earlier one)', without(FIRST_ATTEMPT, fenceCommands, 'local last = 0'), RELEASE),
    scriptSubject('  without TIME (the token from the server clock)', without(FIRST_ATTEMPT, "if free then\n  local time = redis.call('time')", "if free then\n  local time = { '1764400000', '123456' }"), RELEASE),
    scriptSubject('  two scripts that do nothing, same keys and arguments', EMPTY_SCRIPTS, EMPTY_SCRIPTS),
  ];
}

async function startServer(dir: string): Promise<{ child: ChildProcess; client: Redis; url: string }> {
  const port = 27000 + Math.floor(Math.random() * 2000);
  const child = spawn('valgrind', ['--tool=callgrind', `--callgrind-out-file=${join(dir, 'callgrind.out')}`, 'redis-server', '--port', String(port), '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    await sleep(200);
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.ping();
      return { child, client, url };
    } catch {
      client.disconnect();
    }
  }
  child.kill('SIGKILL');
  throw new Error('redis-server under valgrind did not answer within 40 s');
}

/** The instructions of the dump whose trigger is `label`. */
function instructions(dir: string, trigger: string): number {
  for (const file of readdirSync(dir)) {
    const text = readFileSync(join(dir, file), 'utf8');
    // `callgrind_control -d <trigger>` writes "desc: Trigger: dump <trigger>".
    if (!new RegExp(`^desc: Trigger: .*\\b${trigger}$`, 'm').test(text)) continue;
    const total = /^(?:summary|totals): (\d+)/m.exec(text);
    if (total) return Number(total[1]);
  }
  return Number.NaN;
}

async function main(calls: number): Promise<void> {
  if (spawnSync('valgrind', ['--version'], { stdio: 'ignore' }).status !== 0) throw new Error('valgrind is not installed (apt-get install valgrind)');
  const dir = mkdtempSync(join(tmpdir(), 'redis-instructions-'));
  const { child, client, url } = await startServer(dir);
  const counted: Array<[string, number]> = [];
  try {
    const version = /redis_version:(\S+)/.exec(await client.info('server'))?.[1];
    for (const [index, subject] of subjects().entries()) {
      const call = await subject.prepare(url, client);
      for (let i = 0; i < WARMUP; i++) await call(`warm${index}:${i}`);
      // Releases that `run` does not await have landed: a PING on every connection would be better,
      // but the adapters' connections are their own; a short pause lets them drain.
      await sleep(200);
      execFileSync('callgrind_control', ['-z', String(child.pid)], { stdio: 'ignore' });
      for (let i = 0; i < calls; i++) await call(`s${index}:${i}`);
      await sleep(200);
      execFileSync('callgrind_control', ['-d', `subject${index}`, String(child.pid)], { stdio: 'ignore' });
      await subject.close?.();
      await client.flushall();
      counted.push([subject.label, instructions(dir, `subject${index}`) / calls]);
    }
    const first = counted[0][1];
    console.log(`\nRedis ${version} under callgrind: instructions per call, ${calls} calls after ${WARMUP} of warm-up, names never used before\n`);
    console.log('| subject | instructions per call | ÷ first row |\n| :-- | --: | --: |');
    for (const [label, perCall] of counted) console.log(`| ${label} | ${Math.round(perCall).toLocaleString('en-US')} | ${(perCall / first).toFixed(2)}x |`);
  } finally {
    client.disconnect();
    child.kill('SIGINT');
    await sleep(500);
    rmSync(dir, { recursive: true, force: true });
  }
}

main(Number(process.argv[2] ?? 400)).catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
