import { LockTimeoutError } from '../errors';
import { FORCE_RELEASE_BAD_PERMIT_ID, FORCE_RELEASE_BAD_TOKEN, INVALID_TAKE } from '../lock.messages';
import { forceReleaseToken } from '../validators';
import { Acquisition } from '../locks/acquisition/acquisition';
import type { Contender } from '../locks/acquisition/contender';
import { observeAcquire } from '../metrics/lock-telemetry';
import type { Permit } from './permit';
import { PermitRequest } from './permit-request';
import { SemaphoreKeys } from './semaphore-keys';
import type { AcquireOptions, SemaphoreForceReleaseOptions, SemaphoreInfo } from './semaphore.options';
import { LuaScript } from '../redis/lua-script';
import { cancellable, type Cancellation } from '../runtime/cancellation';
import type { LockEngine } from '../engine/lock-engine';
import { heldSinceOfToken } from '../held-since';

const semaphoreScripts = {
  release: LuaScript.named('semaphore-release'),
  renew: LuaScript.named('semaphore-renew'),
  inspect: LuaScript.named('semaphore-inspect'),
  forceRelease: LuaScript.named('semaphore-force-release'),
};

/**
 * A distributed counting semaphore: at most `permits` permits held at once across every process.
 * Waiters stand in one FIFO line in Redis (server clock, heartbeats, like the fair lock) and sleep on
 * the shared subscriber; a release wakes exactly the waiters its permits admit.
 */
export class Semaphore {
  /** The semaphore's Redis keys (one hash tag, so one cluster slot). */
  readonly keys: SemaphoreKeys;

  constructor(
    /** @internal */
    readonly engine: LockEngine,
    /** The semaphore's name. */
    readonly name: string,
    /** The limit this object asks with (see `SemaphoreLimitError`). */
    readonly permits: number,
  ) {
    this.keys = new SemaphoreKeys(engine.keys, name);
  }

  /**
   * Takes `take` permits (default 1), waiting up to `waitTime` (no `waitTime`: without limit).
   * Rejects with `LockTimeoutError` when not acquired in time, `LockUnavailableError` when Redis
   * could not be asked, the signal's reason when cancelled.
   * @throws {@link LockTimeoutError} (rejects) not acquired within `waitTime`.
   * @throws {@link SemaphoreLimitError} (rejects) the semaphore is in use with another `permits` limit.
   * @throws {@link LockUnavailableError} (rejects) Redis could not be asked.
   */
  async acquire(options?: AcquireOptions): Promise<Permit> {
    const waitTime = options?.waitTime ?? Number.POSITIVE_INFINITY;
    const permit = await this.acquireWithin(waitTime, options);
    if (!permit) throw new LockTimeoutError(this.name, waitTime);
    return permit;
  }

  /**
   * Takes `take` permits within `waitTime` (default 0: one attempt, which never joins the line);
   * resolves `null` when Redis kept answering "busy", rejects with `LockUnavailableError` when it
   * could not be asked.
   * @throws {@link SemaphoreLimitError} (rejects) the semaphore is in use with another `permits` limit.
   * @throws {@link LockUnavailableError} (rejects) Redis could not be asked.
   */
  tryAcquire(options?: AcquireOptions): Promise<Permit | null> {
    return this.acquireWithin(options?.waitTime ?? 0, options);
  }

  /** Permits free right now (the limit stored with the semaphore counts when it is in use). */
  async availablePermits(): Promise<number> {
    const [limit, used] = await this.read(false);
    return Math.max(0, (limit || this.permits) - used);
  }

  /** @internal This semaphore's key in the hold registry. */
  get holdKey(): string {
    return this.keys.base;
  }

  /**
   * @internal `minHoldTime`: `permit`'s lease becomes exactly `ms` from now, in place of its release.
   * False when the permit was no longer held.
   */
  keepPermitFor(permit: Permit, ms: number): Promise<boolean> {
    const { engine, keys } = this;
    const args = [ms, permit.ownerId];
    return engine.call(this.name, (ticket) => semaphoreScripts.renew.run(engine.client, [keys.base, keys.leases], args, ticket)).then((renewed) => renewed === 1);
  }

  /** @internal The state as `SemaphoreService.inspect` reports it. */
  async inspect(): Promise<SemaphoreInfo> {
    const [limit, used, holders, waiters, serverTime] = await this.read(true);
    const info: SemaphoreInfo = {
      name: this.name,
      kind: 'semaphore',
      permits: limit || undefined,
      available: limit ? Math.max(0, limit - used) : undefined,
      serverTime,
      holders: [],
      waiters: [],
    };
    for (let i = 0; i < holders.length; i += 4) {
      const fencingToken = Number(holders[i + 3]);
      const heldSince = heldSinceOfToken(fencingToken, serverTime);
      (info.holders as unknown[]).push({
        ownerId: String(holders[i]),
        permits: Number(holders[i + 1]),
        ttl: Number(holders[i + 2]),
        fencingToken,
        ...(heldSince === undefined ? {} : { heldSince }),
      });
    }
    for (let i = 0; i < waiters.length; i += 2) {
      (info.waiters as unknown[]).push({ ownerId: String(waiters[i]), permits: Number(waiters[i + 1]) });
    }
    return info;
  }

  /**
   * Takes one holder's permits back by force, only while the holder with `fencingToken` (and
   * `permitId`, when given) still holds them; the freed permits go to the waiters at the head of the
   * line, as after a release. Resolves true when it took them back, false when no live holder
   * holds permits with that token (released, lost, or never granted). The holder learns it lost
   * them at its next renewal (its permit's `signal` aborts with `LockLostError`).
   * @throws `TypeError` (rejects) `fencingToken` is not a positive whole number, or `permitId` is not a non-empty string.
   * @throws {@link LockUnavailableError} (rejects) Redis could not be asked.
   */
  async forceRelease(holder: SemaphoreForceReleaseOptions): Promise<boolean> {
    const token = forceReleaseToken('forceRelease', holder?.fencingToken);
    if (!token) throw new TypeError(FORCE_RELEASE_BAD_TOKEN('forceRelease', undefined));
    const permitId = holder.permitId ?? '';
    if (typeof permitId !== 'string' || (holder.permitId !== undefined && permitId === '')) throw new TypeError(FORCE_RELEASE_BAD_PERMIT_ID(holder.permitId));
    const { engine, keys } = this;
    const { client, publishCommand, fenceMemoryMs, options } = engine;
    const reply = await engine.call(this.name, (ticket) =>
      semaphoreScripts.forceRelease.run(
        client,
        [keys.base, keys.leases, keys.line, keys.deadlines, keys.channel, keys.fence],
        [permitId, token, publishCommand, options.fairLockWaiterTimeout, fenceMemoryMs],
        ticket,
      ),
    );
    return Number(reply) === 1;
  }

  /**
   * @internal Gives back the permits of `permitId` (a release), or, for a waiter giving up
   * (`leaving`), leaves the line and gives back what a late attempt may have granted.
   */
  async giveBack(permitId: string, leaving: boolean): Promise<number | null> {
    const { engine, keys } = this;
    const { client, publishCommand, releaseRecordTtlMs, fenceMemoryMs, options } = engine;
    const requestId = engine.ids.nextRequest();
    // No ticket: a release is safe to apply late, so a NOSCRIPT answered after the caller stopped
    // waiting still sends the source (a first release during an outage must not be dropped).
    const reply = await engine.call(this.name, () =>
      semaphoreScripts.release.run(
        client,
        [keys.base, keys.leases, keys.line, keys.deadlines, keys.channel, keys.releaseRecord(permitId, requestId), keys.fence],
        [permitId, publishCommand, releaseRecordTtlMs, leaving ? 1 : 0, options.fairLockWaiterTimeout, fenceMemoryMs],
      ),
    );
    return reply === null || reply === undefined ? null : Number(reply);
  }

  private read(detailed: boolean): Promise<[number, number, unknown[], unknown[], number]> {
    const { engine, keys } = this;
    return engine.call(this.name, async (ticket) => {
      const reply = (await semaphoreScripts.inspect.run(
        engine.client,
        [keys.base, keys.leases, keys.line, keys.deadlines],
        [detailed ? 1 : 0],
        ticket,
      )) as [number, number, unknown[], unknown[], number];
      return [Number(reply[0]), Number(reply[1]), reply[2] ?? [], reply[3] ?? [], Number(reply[4])];
    });
  }

  /** `options.take` (default 1), checked against this semaphore's `permits`. */
  protected checkTake(options: AcquireOptions | undefined): number {
    const take = options?.take ?? 1;
    if (!Number.isInteger(take) || take < 1 || take > this.permits) throw new RangeError(INVALID_TAKE(this.permits, take));
    return take;
  }

  /** One acquisition's request for permits, as the acquisition machine's contender (each layout has its own). */
  protected request(options: AcquireOptions | undefined): Contender<Permit | null> {
    return new PermitRequest(this, this.engine.ids.nextOwner(), this.checkTake(options));
  }

  /**
   * An acquisition with the locks' telemetry (`lock.kind` = `semaphore`): `lock.waiting`,
   * `lock.acquisitions` and `lock.wait.duration` by outcome, the span `lock.acquire <template>`.
   */
  private acquireWithin(waitMs: number, options: AcquireOptions | undefined): Promise<Permit | null> {
    const { telemetry } = this.engine;
    const acquire = (): Promise<Permit | null> => cancellable(options?.signal, (cancellation) => this.acquireUnobserved(waitMs, options, cancellation));
    if (!telemetry) return acquire();
    let permit: Permit | null = null;
    // A token of 0 is none: layout 'redisson', whose permits keep no token, reports none.
    return observeAcquire(telemetry, 'semaphore', this.name, options, () => permit?.fencingToken || undefined, () =>
      acquire().then((granted) => (permit = granted) !== null),
    ).then(() => permit);
  }

  private acquireUnobserved(waitMs: number, options: AcquireOptions | undefined, cancellation: Cancellation | undefined): Promise<Permit | null> {
    let contender: Contender<Permit | null>;
    try {
      contender = this.request(options);
    } catch (error) {
      return Promise.reject(error);
    }
    return Acquisition.start<Permit | null>(contender, waitMs, null, options, cancellation);
  }
}
