import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * A real Java Redisson, driven from Node tests: the Maven program in `redisson-driver/` (see
 * README.md beside this file), built once per Redisson version and spawned as `java -jar`.
 *
 *   const java = await RedissonProcess.start({ version: '4.7.0', address: redis.url, watchdogMs: 3000 });
 *   const t1 = java.holder('t1');           // one Java thread: Redisson locks belong to threads
 *   await t1.lock('orders');
 *   await t1.unlock('orders');
 *   await java.close();
 */

/** The newest Redisson of each major line that Maven Central served on 2026-11-26. */
export const REDISSON_3 = '3.52.0';
export const REDISSON_4 = '4.7.0';

/** The versions a run tests: `REDISSON_VERSION` (comma-separated; `3` and `4` stand for the newest of each), else both. */
export function redissonVersionsUnderTest(): string[] {
  const listed = (process.env.REDISSON_VERSION ?? '').split(',').map((v) => v.trim()).filter(Boolean);
  if (listed.length === 0) return [REDISSON_3, REDISSON_4];
  return listed.map((v) => (v === '3' ? REDISSON_3 : v === '4' ? REDISSON_4 : v));
}

/** The driver's sources: beside this file, or in the source tree when the bench runs it compiled from dist/test/interop/. */
export const DRIVER_DIR =
  [join(__dirname, 'redisson-driver'), join(__dirname, '..', '..', '..', 'test', 'interop', 'redisson-driver')].find((dir) => existsSync(dir)) ??
  join(__dirname, 'redisson-driver');

/** Every file the jar is built from, in a stable order. */
function sourceFiles(): string[] {
  const files = [join(DRIVER_DIR, 'pom.xml')];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((x, y) => x.name.localeCompare(y.name))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) files.push(path);
    }
  };
  walk(join(DRIVER_DIR, 'src'));
  return files;
}

/** A digest of the driver's sources and the Redisson version: the jar is rebuilt when it changes. */
function sourceDigest(version: string): string {
  const hash = createHash('sha256').update(`redisson ${version}\n`);
  for (const file of sourceFiles()) hash.update(relative(DRIVER_DIR, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex');
}

/**
 * The driver jar for `version`, built with Maven into `redisson-driver/target/redisson-<version>/`
 * unless the jar there was built from the current sources (a `sources.sha256` stamp beside it).
 * Synchronous: call it from a `beforeAll` with a timeout that allows a first build (dependencies
 * come from Maven Central the first time; later builds take ~10 s, a cached jar none).
 */
export function buildRedissonDriver(version: string): string {
  if (!/^[0-9A-Za-z.\-]+$/.test(version)) throw new Error(`not a Redisson version: ${version}`);
  const dir = join(DRIVER_DIR, 'target', `redisson-${version}`);
  const jar = join(dir, 'redisson-driver.jar');
  const stamp = join(dir, 'sources.sha256');
  const digest = sourceDigest(version);
  if (existsSync(jar) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === digest) return jar;
  const mvn = process.env.MVN_BIN || 'mvn';
  const args = ['-q', '-B', '-DskipTests', `-Dredisson.version=${version}`];
  // CI keeps its Maven repository in its own cache folder (.ci/interop) and builds offline once it is warm.
  if (process.env.MVN_REPO_LOCAL) args.push(`-Dmaven.repo.local=${process.env.MVN_REPO_LOCAL}`);
  if (process.env.MVN_OFFLINE === '1') args.push('--offline');
  const run = spawnSync(mvn, [...args, 'clean', 'package'], {
    cwd: DRIVER_DIR,
    encoding: 'utf8',
    timeout: 600_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.status !== 0 || !existsSync(jar)) {
    const output = `${run.stdout ?? ''}${run.stderr ?? ''}`.trim().split('\n').slice(-40).join('\n');
    throw new Error(`building the Redisson ${version} driver failed (${run.error?.message ?? `exit ${run.status}`}):\n${output}`);
  }
  writeFileSync(stamp, `${digest}\n`);
  return jar;
}

export interface RedissonProcessOptions {
  /** Redisson version to run (its jar is built on demand). Default: the first of `redissonVersionsUnderTest()`. */
  readonly version?: string;
  /** A standalone server, `redis://host:port`. */
  readonly address?: string;
  /** Cluster node addresses (`redis://host:port` each): Redisson's cluster mode instead of `address`. */
  readonly cluster?: readonly string[];
  /** Cluster mode only: Redisson's `shardedSubscriptionMode` (default `auto`, as in Redisson). */
  readonly sharded?: 'auto' | 'on' | 'off';
  /** `Config.lockWatchdogTimeout` in ms (Redisson's default 30 000): the lease of a lock taken without one. */
  readonly watchdogMs?: number;
  /** `Config.fairLockWaitTimeout` in ms (Redisson's default 300 000). */
  readonly fairLockWaitMs?: number;
  /** How long to wait for the `ready` line (JVM start and Redisson's connection pools). Default 60 s. */
  readonly startTimeoutMs?: number;
  /** A command's reply deadline unless the call says otherwise. Default 15 s. */
  readonly commandTimeoutMs?: number;
}

/** A command's deadline; a blocking `lock` may need more than the default. */
export interface CallOptions {
  readonly timeoutMs?: number;
}

export interface LeaseOptions extends CallOptions {
  /** An explicit lease (no watchdog); without it Redisson's watchdog renews the lock. */
  readonly leaseMs?: number;
}

/** A Java exception a command ended with; `javaClass` is its simple name, e.g. `IllegalMonitorStateException`. */
export class RedissonCommandError extends Error {
  constructor(
    readonly command: string,
    readonly javaClass: string,
    readonly javaMessage: string,
  ) {
    super(`Redisson ${command}: ${javaClass}: ${javaMessage}`);
    this.name = 'RedissonCommandError';
  }
}

interface Pending {
  readonly command: string;
  readonly resolve: (value: string | undefined) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
}

const NO_SPACE = /^\S+$/;

/** One JVM running Redisson with one `RedissonClient` (one client id), driven over stdin/stdout. */
export class RedissonProcess {
  private readonly pending = new Map<string, Pending>();
  private nextId = 1;
  private exitReason: string | undefined;
  private readonly exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    /** The Redisson version the jar was built against (as the jar reports it). */
    readonly version: string,
    /** This client's id: Redisson's lock owners are `<clientId>:<threadId>`. */
    readonly clientId: string,
    private readonly commandTimeoutMs: number,
    lines: AsyncIterator<string>,
    /** The last lines the JVM wrote to stderr (kept up to date by `start`). */
    private readonly stderrTail: string[],
  ) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exitReason = signal ? `killed by ${signal}` : `exited with code ${code}`;
        for (const [id, call] of this.pending) {
          clearTimeout(call.timer);
          call.reject(new Error(`Redisson ${call.command}: the JVM ${this.exitReason} before replying${this.stderrSuffix()}`));
          this.pending.delete(id);
        }
        resolve();
      }),
    );
    void this.readReplies(lines);
  }

  /** Builds the jar if needed, spawns the JVM and resolves once Redisson is connected (`ready`). */
  static async start(options: RedissonProcessOptions): Promise<RedissonProcess> {
    const version = options.version ?? redissonVersionsUnderTest()[0];
    const jar = buildRedissonDriver(version);
    const args = [
      // Two cores shared with other work: a small, quickly started JVM is enough.
      '-XX:+UseSerialGC',
      '-XX:TieredStopAtLevel=1',
      '-Xmx256m',
      '-jar',
      jar,
    ];
    if (options.cluster) args.push('--cluster', options.cluster.join(','), '--sharded', options.sharded ?? 'auto');
    else if (options.address) args.push('--address', options.address);
    else throw new Error('RedissonProcess.start needs an address or cluster nodes');
    if (options.watchdogMs !== undefined) args.push('--watchdog', String(options.watchdogMs));
    if (options.fairLockWaitMs !== undefined) args.push('--fair-wait', String(options.fairLockWaitMs));

    const java = process.env.JAVA_BIN || 'java';
    const child = spawn(java, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const stderrTail: string[] = [];
    createInterface({ input: child.stderr! }).on('line', (line) => {
      stderrTail.push(line);
      if (stderrTail.length > 50) stderrTail.shift();
    });
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    const startTimeoutMs = options.startTimeoutMs ?? 60_000;
    let timer: NodeJS.Timeout | undefined;
    const failure = (why: string): Error => new Error(`Redisson ${version} driver did not start: ${why}${stderrTail.length ? `\n${stderrTail.join('\n')}` : ''}`);
    try {
      const first = await Promise.race([
        lines.next(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(failure(`no ready line within ${startTimeoutMs} ms`)), startTimeoutMs);
        }),
        new Promise<never>((_, reject) => child.once('error', (error) => reject(failure(error.message)))),
        new Promise<never>((_, reject) => child.once('exit', (code, signal) => reject(failure(`exited (${signal ?? code})`)))),
      ]);
      const words = first.done ? [] : first.value.split('\t');
      if (words[0] !== 'ready') throw failure(first.done ? 'stdout closed' : first.value);
      return new RedissonProcess(child, words[2], words[1], options.commandTimeoutMs ?? 15_000, lines, stderrTail);
    } catch (error) {
      child.kill('SIGKILL');
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The OS process id of the JVM. */
  get pid(): number {
    return this.child.pid!;
  }

  /** Whether the JVM is still running. */
  get alive(): boolean {
    return this.exitReason === undefined;
  }

  /** A Java thread of this JVM (created on first use): every lock call on one holder runs on its thread. */
  holder(name: string): RedissonHolder {
    if (!NO_SPACE.test(name)) throw new Error(`holder names have no spaces: ${JSON.stringify(name)}`);
    return new RedissonHolder(this, name);
  }

  /**
   * Sends `<id> <holder> <command> <args...>` and resolves with the reply's value (undefined when the
   * command returns nothing). Rejects with a `RedissonCommandError` for a Java exception, or when no
   * reply comes within the deadline (the Java thread may still be running the command then).
   */
  send(holder: string, command: string, args: ReadonlyArray<string | number>, { timeoutMs }: CallOptions = {}): Promise<string | undefined> {
    if (this.exitReason) return Promise.reject(new Error(`Redisson ${command}: the JVM ${this.exitReason}${this.stderrSuffix()}`));
    const words = [holder, command, ...args.map(String)];
    for (const word of words) if (!NO_SPACE.test(word)) throw new Error(`protocol words have no spaces: ${JSON.stringify(word)}`);
    const id = String(this.nextId++);
    const what = `${command} ${args.join(' ')} on ${holder}`.trim();
    return new Promise((resolve, reject) => {
      const ms = timeoutMs ?? this.commandTimeoutMs;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`Redisson ${what}: no reply within ${ms} ms${this.stderrSuffix()}`));
      }, ms);
      this.pending.set(id, { command: what, resolve, reject, timer });
      this.child.stdin!.write(`${id} ${words.join(' ')}\n`);
    });
  }

  /** SIGKILL, as a crashed host: nothing is released, the watchdog stops. Resolves once the JVM is gone. */
  async kill(): Promise<void> {
    if (this.alive) this.child.kill('SIGKILL');
    await this.exited;
  }

  /** Asks the JVM to shut Redisson down and exit; kills it if it has not within `timeoutMs`. */
  async close(timeoutMs = 10_000): Promise<void> {
    if (!this.alive) return;
    const id = String(this.nextId++);
    this.child.stdin!.write(`${id} - quit\n`);
    this.child.stdin!.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** The last lines the JVM wrote to stderr (Redisson's warnings). */
  stderr(): readonly string[] {
    return [...this.stderrTail];
  }

  private stderrSuffix(): string {
    return this.stderrTail.length ? `\n--- JVM stderr (tail) ---\n${this.stderrTail.slice(-15).join('\n')}` : '';
  }

  private async readReplies(lines: AsyncIterator<string>): Promise<void> {
    for (;;) {
      const next = await lines.next();
      if (next.done) return;
      const [id, status, ...rest] = next.value.split('\t');
      const call = this.pending.get(id);
      if (!call) continue; // a reply after its deadline, or the quit's
      this.pending.delete(id);
      clearTimeout(call.timer);
      const value = rest.length ? rest.join('\t') : undefined;
      if (status === 'ok') call.resolve(value);
      else {
        const text = value ?? '';
        const colon = text.indexOf(': ');
        call.reject(new RedissonCommandError(call.command, colon > 0 ? text.slice(0, colon) : text, colon > 0 ? text.slice(colon + 2) : ''));
      }
    }
  }
}

const bool = (value: string | undefined): boolean => value === 'true';
const num = (value: string | undefined): number => Number(value);
const token = (value: string | undefined): bigint | null => (value === undefined || value === 'null' ? null : BigInt(value));
const lease = (leaseMs: number | undefined): number[] => (leaseMs === undefined ? [] : [leaseMs]);

/**
 * One Java thread in a `RedissonProcess`. Redisson's locks are owned by threads, so lock and unlock
 * of one lock go through the same holder. A holder runs its commands one after another: while a
 * `lock` waits, the holder's later commands wait behind it (use another holder meanwhile).
 */
export class RedissonHolder {
  constructor(
    readonly jvm: RedissonProcess,
    readonly name: string,
  ) {}

  private call(command: string, args: ReadonlyArray<string | number>, options?: CallOptions): Promise<string | undefined> {
    return this.jvm.send(this.name, command, args, options);
  }

  /** The Java thread id behind this holder. */
  async threadId(): Promise<number> {
    return num(await this.call('threadId', []));
  }

  /** The hash field Redisson writes for this holder's locks: `<clientId>:<threadId>`. */
  async owner(): Promise<string> {
    return (await this.call('owner', []))!;
  }

  /** Keeps the holder's thread busy for `ms` (its later commands wait). */
  async sleep(ms: number, options?: CallOptions): Promise<void> {
    await this.call('sleep', [ms], options);
  }

  // RLock
  async lock(name: string, { leaseMs, ...options }: LeaseOptions = {}): Promise<void> {
    await this.call('lock', [name, ...lease(leaseMs)], options);
  }
  async tryLock(name: string, waitMs: number, { leaseMs, timeoutMs }: LeaseOptions = {}): Promise<boolean> {
    return bool(await this.call('tryLock', [name, waitMs, ...lease(leaseMs)], { timeoutMs: timeoutMs ?? waitMs + 15_000 }));
  }
  async unlock(name: string, options?: CallOptions): Promise<void> {
    await this.call('unlock', [name], options);
  }
  async forceUnlock(name: string): Promise<boolean> {
    return bool(await this.call('forceUnlock', [name]));
  }
  async isLocked(name: string): Promise<boolean> {
    return bool(await this.call('isLocked', [name]));
  }
  async isHeldByThisThread(name: string): Promise<boolean> {
    return bool(await this.call('isHeld', [name]));
  }
  async holdCount(name: string): Promise<number> {
    return num(await this.call('holdCount', [name]));
  }
  /** RLock.remainTimeToLive(): PTTL of the lock key (-2 missing, -1 no TTL). */
  async remainTtl(name: string): Promise<number> {
    return num(await this.call('remainTtl', [name]));
  }

  // RFairLock
  async fairLock(name: string, { leaseMs, ...options }: LeaseOptions = {}): Promise<void> {
    await this.call('fairLock', [name, ...lease(leaseMs)], options);
  }
  async fairTryLock(name: string, waitMs: number, { leaseMs, timeoutMs }: LeaseOptions = {}): Promise<boolean> {
    return bool(await this.call('fairTryLock', [name, waitMs, ...lease(leaseMs)], { timeoutMs: timeoutMs ?? waitMs + 15_000 }));
  }
  async fairUnlock(name: string, options?: CallOptions): Promise<void> {
    await this.call('fairUnlock', [name], options);
  }

  // RReadWriteLock
  async readLock(name: string, { leaseMs, ...options }: LeaseOptions = {}): Promise<void> {
    await this.call('readLock', [name, ...lease(leaseMs)], options);
  }
  async readTryLock(name: string, waitMs: number, { leaseMs, timeoutMs }: LeaseOptions = {}): Promise<boolean> {
    return bool(await this.call('readTryLock', [name, waitMs, ...lease(leaseMs)], { timeoutMs: timeoutMs ?? waitMs + 15_000 }));
  }
  async readUnlock(name: string, options?: CallOptions): Promise<void> {
    await this.call('readUnlock', [name], options);
  }
  async writeLock(name: string, { leaseMs, ...options }: LeaseOptions = {}): Promise<void> {
    await this.call('writeLock', [name, ...lease(leaseMs)], options);
  }
  async writeTryLock(name: string, waitMs: number, { leaseMs, timeoutMs }: LeaseOptions = {}): Promise<boolean> {
    return bool(await this.call('writeTryLock', [name, waitMs, ...lease(leaseMs)], { timeoutMs: timeoutMs ?? waitMs + 15_000 }));
  }
  async writeUnlock(name: string, options?: CallOptions): Promise<void> {
    await this.call('writeUnlock', [name], options);
  }

  // RFencedLock
  /** lockAndGetToken(): the token. With `leaseMs`, lockAndGetToken(lease, ms) (which Redisson 4.7 ignores, see README). */
  async fencedLock(name: string, { leaseMs, ...options }: LeaseOptions = {}): Promise<bigint> {
    return token(await this.call('fencedLock', [name, ...lease(leaseMs)], options))!;
  }
  /** tryLockAndGetToken(wait[, lease]): the token, or null when the wait ran out. */
  async fencedTryLock(name: string, waitMs: number, { leaseMs, timeoutMs }: LeaseOptions = {}): Promise<bigint | null> {
    return token(await this.call('fencedTryLock', [name, waitMs, ...lease(leaseMs)], { timeoutMs: timeoutMs ?? waitMs + 15_000 }));
  }
  async fencedUnlock(name: string, options?: CallOptions): Promise<void> {
    await this.call('fencedUnlock', [name], options);
  }
  /** getToken(): the last token handed out (null when none). */
  async fencedToken(name: string): Promise<bigint | null> {
    return token(await this.call('fencedToken', [name]));
  }

  // RSemaphore
  async semTrySetPermits(name: string, permits: number): Promise<boolean> {
    return bool(await this.call('semTrySetPermits', [name, permits]));
  }
  async semAddPermits(name: string, permits: number): Promise<void> {
    await this.call('semAddPermits', [name, permits]);
  }
  async semAcquire(name: string, permits = 1, options?: CallOptions): Promise<void> {
    await this.call('semAcquire', [name, permits], options);
  }
  async semTryAcquire(name: string, permits: number, waitMs: number, { timeoutMs }: CallOptions = {}): Promise<boolean> {
    return bool(await this.call('semTryAcquire', [name, permits, waitMs], { timeoutMs: timeoutMs ?? waitMs + 15_000 }));
  }
  async semRelease(name: string, permits = 1): Promise<void> {
    await this.call('semRelease', [name, permits]);
  }
  async semAvailable(name: string): Promise<number> {
    return num(await this.call('semAvailable', [name]));
  }

  // RPermitExpirableSemaphore
  async pesTrySetPermits(name: string, permits: number): Promise<boolean> {
    return bool(await this.call('pesTrySetPermits', [name, permits]));
  }
  /** acquire([lease]): the permit id (32 hex digits; 16 raw bytes in Redis). */
  async pesAcquire(name: string, { leaseMs, ...options }: LeaseOptions = {}): Promise<string> {
    return (await this.call('pesAcquire', [name, ...lease(leaseMs)], options))!;
  }
  /** `tryAcquire(waitMs[, leaseMs])`: the permit id, or null when none came within the wait. */
  async pesTryAcquire(name: string, waitMs: number, { leaseMs, timeoutMs }: LeaseOptions = {}): Promise<string | null> {
    const id = await this.call('pesTryAcquire', [name, waitMs, ...lease(leaseMs)], { timeoutMs: timeoutMs ?? waitMs + 15_000 });
    return id === undefined || id === 'null' ? null : id;
  }
  async pesRelease(name: string, permitId: string): Promise<void> {
    await this.call('pesRelease', [name, permitId]);
  }
  async pesAvailable(name: string): Promise<number> {
    return num(await this.call('pesAvailable', [name]));
  }

  // RedissonRedLock over one extra RedissonClient per master address (standalone servers, `redis://h:p`)
  /** `new RedissonRedLock(getLock(name) on each master).lock([lease])`; without `leaseMs` the watchdog renews it. */
  async redLock(name: string, masters: readonly string[], { leaseMs, ...options }: LeaseOptions = {}): Promise<void> {
    await this.call('redLock', [name, leaseMs ?? -1, masters.join(',')], options);
  }
  /** `tryLock(wait, lease)` of that RedissonRedLock (a lease is required by Redisson's API here). */
  async redTryLock(name: string, masters: readonly string[], waitMs: number, leaseMs: number, { timeoutMs }: CallOptions = {}): Promise<boolean> {
    return bool(await this.call('redTryLock', [name, waitMs, leaseMs, masters.join(',')], { timeoutMs: timeoutMs ?? waitMs + 15_000 }));
  }
  /** Unlocks the RedissonRedLock the last `redLock`/`redTryLock` of `name` made. */
  async redUnlock(name: string, options?: CallOptions): Promise<void> {
    await this.call('redUnlock', [name], options);
  }

  // RedissonMultiLock over getLock(n) of this JVM's client for each name, in the order given
  async multiLock(names: readonly string[], { leaseMs, ...options }: LeaseOptions = {}): Promise<void> {
    await this.call('multiLock', [names.join(','), ...lease(leaseMs)], options);
  }
  async multiTryLock(names: readonly string[], waitMs: number, { leaseMs, timeoutMs }: LeaseOptions = {}): Promise<boolean> {
    return bool(await this.call('multiTryLock', [names.join(','), waitMs, ...lease(leaseMs)], { timeoutMs: timeoutMs ?? waitMs + 15_000 }));
  }
  async multiUnlock(names: readonly string[], options?: CallOptions): Promise<void> {
    await this.call('multiUnlock', [names.join(',')], options);
  }

  /**
   * The lost-update probe: GET `key`, pause `gapMs`, SET it to the value + 1, through RBucket, not
   * atomically. Under a lock that excludes, N calls leave N. Resolves with the value it wrote.
   */
  async incr(key: string, gapMs = 0): Promise<number> {
    return num(await this.call('incr', gapMs ? [key, gapMs] : [key]));
  }
  async get(key: string): Promise<string | null> {
    const value = await this.call('get', [key]);
    return value === 'null' || value === undefined ? null : value;
  }
}
