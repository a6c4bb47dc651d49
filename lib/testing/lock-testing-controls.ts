import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { TESTING_KIT_BAD_HOLD, TESTING_KIT_BAD_REPLICAS } from './testing-kit.messages';
import { RESOLVED_LOCK_OPTIONS } from '../lock.module-definition';
import type { ResolvedLockOptions } from '../lock.options';
import { LockInspector } from '../introspection/lock-inspector';
import { LockService } from '../lock.service';
import { ReadWriteLockService } from '../read-write-lock.service';
import { LockKeys } from '../redis/lock-keys';
import { RedissonNames } from '../layouts/redisson-names';
import { LockEngine } from '../engine/lock-engine';
import { SemaphoreKeys } from '../semaphores/semaphore-keys';
import { SemaphoreService } from '../semaphores/semaphore.service';
import { AcquisitionLog, type RecordedAcquisition } from './acquisition-log';
import { SimulatedNetwork } from './simulated-network';

/** How `holdElsewhere` holds a name. */
export interface HoldElsewhereOptions {
  /**
   * `exclusive` (default): the reentrant lock of the name (which the fair lock shares);
   * `read` / `write`: the read-write lock of the name in that mode.
   */
  mode?: 'exclusive' | 'read' | 'write';
  /**
   * Holds the semaphore of the name instead: `permits` is its limit (as the app's
   * `getSemaphore(name, { permits })`), and all of them are taken unless `take` says fewer.
   */
  permits?: number;
  /** With `permits`: how many permits the other process takes (default: all). */
  take?: number;
}

/** A hold by the simulated other process. */
export interface ElsewhereHold {
  /** Lets go of it (once; later calls do nothing). */
  release(): Promise<void>;
}

/**
 * Drives the unhappy paths of code under test: contention from another process, a lock lost under
 * its holder, Redis going away, and the record of every acquisition.
 */
@Injectable()
export class LockTestingControls implements OnApplicationShutdown {
  private elsewhere: { engine: LockEngine; locks: LockService; readWrite: ReadWriteLockService; semaphores: SemaphoreService } | undefined;
  private readonly elsewhereHolds = new Set<ElsewhereHold>();

  constructor(
    @Inject(LockEngine) private readonly engine: LockEngine,
    @Inject(RESOLVED_LOCK_OPTIONS) private readonly options: ResolvedLockOptions,
    @Inject(SimulatedNetwork) private readonly network: SimulatedNetwork,
    @Inject(AcquisitionLog) private readonly log: AcquisitionLog,
  ) {}

  /**
   * Resolves once another simulated process (a second module instance with its own client id,
   * through the same scripts and keyspace) holds `name`, waiting for it like any other holder
   * would. It keeps the hold alive with its own watchdog until `release()`.
   */
  async holdElsewhere(name: string, options: HoldElsewhereOptions = {}): Promise<ElsewhereHold> {
    const other = this.otherProcess();
    let release: () => Promise<void>;
    if (options.permits !== undefined) {
      if (options.mode !== undefined) throw new TypeError(TESTING_KIT_BAD_HOLD(name, 'give either mode (a lock) or permits (a semaphore), not both'));
      const permit = await other.semaphores.getSemaphore(name, { permits: options.permits }).acquire({ take: options.take ?? options.permits });
      release = () => permit.release();
    } else {
      const mode = options.mode ?? 'exclusive';
      if (options.take !== undefined) throw new TypeError(TESTING_KIT_BAD_HOLD(name, 'take applies to a semaphore (give permits)'));
      const lock =
        mode === 'exclusive'
          ? other.locks.getLock(name)
          : mode === 'read'
            ? other.readWrite.getReadWriteLock(name).readLock()
            : mode === 'write'
              ? other.readWrite.getReadWriteLock(name).writeLock()
              : undefined;
      if (!lock) throw new TypeError(TESTING_KIT_BAD_HOLD(name, `mode must be 'exclusive', 'read' or 'write' (got ${String(mode)})`));
      await lock.lock();
      release = () => lock.unlock();
    }
    let released = false;
    const hold: ElsewhereHold = {
      release: async () => {
        if (released) return;
        released = true;
        this.elsewhereHolds.delete(hold);
        await release();
      },
    };
    this.elsewhereHolds.add(hold);
    return hold;
  }

  /**
   * The lock `name` (its reentrant/fair, read-write and semaphore state) vanishes, as if its lease
   * had run out or an operator deleted it; resolves at once. Each holder learns it when production
   * would: a watchdog-kept hold at the watchdog's next round (within `watchdogTimeout / 3`), a
   * fixed-lease hold when its lease ends. Its `signal` then aborts with `LockLostError`, and its
   * release finds nothing (which `run` and the decorators do not throw). Under fake timers, advance
   * the time to get there. In layout 'redisson' the keys are Redisson's of the mapped name (a fenced
   * lock's token counter stays).
   */
  async loseLock(name: string): Promise<void> {
    if (this.engine.redisson) return this.loseRedissonLock(this.engine.redisson.mapName(name));
    const keys = this.engine.keys;
    const lockKey = keys.lock(name);
    const readWriteKey = keys.readWrite(name);
    const semaphore = new SemaphoreKeys(keys, name);
    const gone = [lockKey, readWriteKey, LockKeys.readWriteLeases(readWriteKey), semaphore.base, semaphore.leases];
    for (const server of this.network.all()) for (const key of gone) server.keyspace.delete(key);
  }

  /**
   * Layout 'redisson': the keys of the mapped name `key` that hold its locks (docs/redisson-interop.md#keys):
   * the hash (plain, fair, read-write; a semaphore's counter), a fair lock's queue and deadlines,
   * the readers' timeout keys and a semaphore's leases. An RFencedLock's token counter stays, as
   * when a lease runs out: tokens keep growing.
   */
  private loseRedissonLock(key: string): void {
    const gone = new Set([key, RedissonNames.fairQueue(key), RedissonNames.fairTimeouts(key), RedissonNames.semaphoreTimeouts(key)]);
    // <prefix>:<owner>:rwlock_timeout:<k>, owners being '<36-character client id>:<n>' (no other name's keys).
    const readHold = new RegExp(`^${escapeRegExp(RedissonNames.readKeyPrefix(key))}:[0-9a-f-]{36}:\\d+:rwlock_timeout:\\d+$`);
    for (const server of this.network.all()) {
      for (const stored of server.keyspace.keys(server.now())) {
        if (gone.has(stored) || readHold.test(stored)) server.keyspace.delete(stored);
      }
    }
  }

  /**
   * While on, Redis is unreachable for this module (and the simulated other process): every lock
   * operation rejects with `LockUnavailableError`, renewals fail, and a holder whose lease runs out
   * meanwhile loses its lock. Off: connections come back and waiters retry at once.
   */
  setUnavailable(on: boolean): void {
    this.network.setAvailable(!on);
  }

  /**
   * How many replicas confirm writes from now on (Redis `WAIT`), for code using the `syncReplicas`
   * option: with fewer than `syncReplicas` (none by default) every acquisition fails as it would
   * against a server without enough replicas. `LockTestingModule.forRoot({ replicas })` sets it
   * from the start.
   */
  setReplicas(count: number): void {
    if (!Number.isInteger(count) || count < 0) throw new RangeError(TESTING_KIT_BAD_REPLICAS(count));
    this.network.setReplicas(count);
  }

  /** Every acquisition of this module so far, in the order they ended. */
  get acquisitions(): readonly RecordedAcquisition[] {
    return this.log.entries;
  }

  /** Clears `acquisitions`, makes Redis available again and releases every `holdElsewhere` hold. */
  async reset(): Promise<void> {
    this.log.clear();
    this.setUnavailable(false);
    await Promise.all([...this.elsewhereHolds].map((hold) => hold.release().catch(() => undefined)));
  }

  async onApplicationShutdown(): Promise<void> {
    this.elsewhereHolds.clear();
    const other = this.elsewhere;
    this.elsewhere = undefined;
    await other?.engine.onApplicationShutdown();
  }

  private otherProcess() {
    if (!this.elsewhere) {
      const engine = new LockEngine({ ...this.options, clientName: `${this.options.clientName} (elsewhere)` }, { connect: this.network.connect });
      void engine.onApplicationBootstrap().catch(() => undefined);
      this.elsewhere = {
        engine,
        locks: new LockService(engine, new LockInspector(engine)),
        readWrite: new ReadWriteLockService(engine, new LockInspector(engine)),
        semaphores: new SemaphoreService(engine),
      };
    }
    return this.elsewhere;
  }
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
