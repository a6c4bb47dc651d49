import type { CallTicket } from '../../redis/bounded-call';
import type { ScriptCall } from '../../redis/lua-script';
import { LockUnavailableError, ReentryEndedError } from '../../errors';
import { LOCK_LOST, LOST_NEW_EPISODE } from '../../lock.messages';
import { RedissonNames } from '../../layouts/redisson-names';
import type { RedissonRuntime } from '../../layouts/redisson-runtime';
import type { LockEngine } from '../../engine/lock-engine';
import type { Cancellation } from '../../runtime/cancellation';
import type { WaitTarget } from '../../deadlocks/wait-node';
import { attemptOnConnection, type AttemptOutcome, type Grant } from '../acquisition/contender';
import { BaseLock } from '../base-lock';
import { unlockLatchId } from './unlock-latch';
import { REENTRY_ENDED, type AttemptResult, type ReleaseResult } from '../attempt-results';
import type { LockOptions } from '../lock';
import { HoldAccounts, type HoldAccount } from './hold-accounts';

const accountsOf = new WeakMap<LockEngine, HoldAccounts>();

/** The engine's hold accounts (one per module instance). */
export function holdAccounts(engine: LockEngine): HoldAccounts {
  let accounts = accountsOf.get(engine);
  if (!accounts) {
    accounts = new HoldAccounts();
    accountsOf.set(engine, accounts);
  }
  return accounts;
}

const ignore = (): undefined => undefined;

/**
 * What the lock kinds of Redisson's layout share (docs/redisson-interop.md#hold-counts). Redis keeps
 * only `owner -> count` there: no request ids, no tokens per hold, no line. So an attempt's grant
 * answers the owner's count after it, and this class compares it with what the process accounts for
 * (`HoldAccounts`): lower, a counted hold had ended in Redis (its bodies are told); higher, a surplus
 * (an ioredis resend that ran twice, an attempt whose answer never came) is taken back at once by the
 * kind's unlock in surplus form. Every give-back is that surplus form, guarded by what the process
 * accounts for when it is sent, so it can never take away a hold anyone here counts on. A release is
 * idempotent through Redisson's own unlock latch. Messages only wake: a hold always comes from an
 * attempt's own answer.
 */
export abstract class RedissonBaseLock extends BaseLock {
  constructor(
    engine: LockEngine,
    name: string,
    /** The hold registry's and owner context's key for this lock (a kind's own namespace of `redisKey`). */
    identity: string,
    ownerId: string,
    /** Redisson's key: the mapped name. */
    readonly redisKey: string,
  ) {
    super(engine, name, identity, ownerId);
  }

  /** The attempt script: its reply is `{count after the grant, token or nil}` when granted, else a TTL. */
  protected abstract acquireCall(leaseMs: number, joinLine: boolean): ScriptCall;
  /**
   * The kind's unlock: `guard` '' releases one hold (with `latchKey` answering a resend); a number
   * is the surplus form (down to that many holds of the owner; -1 when there were no more).
   */
  protected abstract unlockCall(latchKey: string, latchTtlMs: number, guard: string): ScriptCall;

  protected get redisson(): RedissonRuntime {
    return this.engine.redisson as RedissonRuntime;
  }

  /** @internal No line of ours: waiters only sleep and wake on messages (a fair lock queues in Redisson's queue). */
  readonly joinsLineOnFirstAttempt: boolean = false;

  /** @internal Java holders keep no wait-for records: deadlocks are found within this process only. */
  /** Redisson's layout keeps no episode in Redis: a release cannot name one. */
  override get releasesNameEpisode(): boolean {
    return false;
  }

  override get waitTarget(): WaitTarget {
    return { ...super.waitTarget, crossProcess: false };
  }

  /** Waits for the start's sharded pub/sub probe (a cluster on 'auto'), then acquires. */
  protected override acquire(waitMs: number, options: LockOptions | undefined, cancellation?: Cancellation): Promise<boolean> {
    const { redisson } = this;
    if (redisson.decided) return super.acquire(waitMs, options, cancellation);
    return redisson.ready().then(() => super.acquire(waitMs, options, cancellation));
  }

  private get account(): HoldAccount {
    return holdAccounts(this.engine).of(this.lockKey, this.ownerId);
  }

  private settleAccount(account: HoldAccount): void {
    holdAccounts(this.engine).settle(this.lockKey, this.ownerId, account);
  }

  /** How many holds of this owner this process accounts for right now. */
  private accounted(account: HoldAccount): number {
    return (this.hold?.holdCount ?? 0) + account.pending + account.inFlight + account.releasing.size;
  }

  /**
   * An attempt of this owner sent or answered and not yet recorded shares the key's one TTL: an
   * exact `PEXPIRE ms` that Redis runs after it would leave that grant's hold a key shorter than
   * its lease (no watchdog renews an explicit lease). Then `minHoldTime` only extends.
   */
  protected override mayShortenOnKeep(): boolean {
    const account = this.account;
    const open = account.inFlight + account.pending;
    this.settleAccount(account);
    return open === 0;
  }

  /** Not used: `attempt` runs `acquireCall` itself (it needs the reply before it becomes a grant). */
  protected acquireScript(): Promise<AttemptResult> {
    return Promise.reject(new Error('unreachable'));
  }

  /** @internal One attempt, with the owner's count checked against what this process accounts for. */
  override attempt(leaseMs: number, _requestId: string, joinLine: boolean): Promise<AttemptOutcome> {
    const { engine } = this;
    const account = this.account;
    account.inFlight += 1;
    return attemptOnConnection(engine, this.name, (ticket) => {
      const { script, keys, args } = this.acquireCall(leaseMs, joinLine);
      return script.run(engine.client, keys, args, ticket) as Promise<AttemptOutcome>;
    }).then(
      (reply) => this.attemptAnswered(account, reply),
      (error: unknown) => {
        account.inFlight -= 1;
        this.settleAccount(account);
        throw error;
      },
    );
  }

  /**
   * A busy attempt's answer: how long the lock may stay busy (ms; -1: unknown, back off). A kind may
   * read its own codes here (a read-write lock's upgrade refusal throws).
   */
  protected busyOutcome(reply: unknown): number {
    const ttl = Number(reply);
    return ttl > 0 ? ttl : -1;
  }

  private attemptAnswered(account: HoldAccount, reply: unknown): AttemptOutcome {
    // Unanswered: from now on not accounted for, so a later surplus check takes back what it granted.
    account.inFlight -= 1;
    if (reply instanceof LockUnavailableError) {
      this.settleAccount(account);
      return reply;
    }
    if (!Array.isArray(reply)) {
      this.settleAccount(account);
      // A re-entry-only attempt whose owner holds nothing: the hold it would re-enter ended.
      if (this.reenterOnly && reply === REENTRY_ENDED) throw new ReentryEndedError(this.name);
      return this.busyOutcome(reply);
    }
    const count = Number(reply[0]);
    const token = reply[1] === null || reply[1] === undefined ? undefined : Number(reply[1]);
    const counted = this.hold;
    const expected = (counted?.holdCount ?? 0) + account.pending + 1;
    account.pending += 1;
    if (count > expected) this.takeBackSurplus();
    if (counted && count < expected) {
      // The counted hold had ended in Redis (deleted, flushed, expired unseen) and this grant began a
      // new one: its bodies ran unprotected and are told now (docs/owners-and-reentry.md).
      counted.fencingToken = token;
      counted.lose(LOST_NEW_EPISODE);
      this.engine.logger.warn(LOCK_LOST(this.name, LOST_NEW_EPISODE));
    }
    // A re-entry keeps its hold's token (an RFencedLock re-entry increments the counter, as Java's does).
    const grant: Grant = { fencingToken: counted ? counted.fencingToken : token };
    return grant;
  }

  /** @internal */
  override held(grant: Grant, leaseMs: number, options: LockOptions | undefined, grantSentAt: number): boolean {
    const account = this.account;
    account.pending -= 1;
    this.settleAccount(account);
    return super.held(grant, leaseMs, options, grantSentAt);
  }

  /** @internal A grant nobody will use: the surplus form takes it back (and only what nobody here counts on). */
  override undoGrant(): Promise<unknown> {
    const account = this.account;
    account.pending -= 1;
    this.settleAccount(account);
    return this.takeBackSurplus();
  }

  /** @internal An attempt whose answer never came may have granted: take back what nobody accounts for. */
  override abandon(_requestId: string, _joinedLine: boolean, outcomeUnknown: boolean): Promise<unknown> | undefined {
    if (outcomeUnknown) void this.takeBackSurplus();
    return undefined;
  }

  /**
   * The kind's unlock in surplus form, on the command connection after every attempt sent before it
   * (ioredis keeps their order, resends included), guarded by what this process accounts for now.
   */
  protected takeBackSurplus(): Promise<unknown> {
    const account = this.account;
    const guard = this.accounted(account);
    this.settleAccount(account);
    const { script, keys, args } = this.unlockCall(RedissonNames.unlockLatch(this.redisKey, '0'.repeat(32)), 0, String(guard));
    return this.engine.call(this.name, (ticket) => script.run(this.engine.client, keys, args, ticket)).catch(ignore);
  }

  /**
   * One release, idempotent through Redisson's unlock latch (the id is the release's request id, made
   * 32 hex as Redisson's): a resend answers what the first did. The latch goes once answered, as
   * Redisson's goes. A release that leaves holds of the owner in Redis when this process accounts for
   * none found a surplus: taken back at once.
   */
  protected releaseOne(requestId: string, _grantedBy?: string, ticket?: CallTicket): Promise<ReleaseResult> {
    const { engine } = this;
    const latchKey = RedissonNames.unlockLatch(this.redisKey, unlockLatchId(this.engine.ids.clientId, requestId));
    const { script, keys, args } = this.unlockCall(latchKey, engine.releaseRecordTtlMs, '');
    // Accounted for until answered (a resend has the same request id), or until its latch, and so
    // every resend of it, is surely over.
    const releasing = this.account;
    releasing.releasing.add(requestId);
    const forgetLater = (error: unknown): never => {
      setTimeout(() => {
        if (releasing.releasing.delete(requestId)) this.settleAccount(releasing);
      }, engine.releaseRecordTtlMs).unref?.();
      throw error;
    };
    return (script.run(engine.client, keys, args, ticket) as Promise<ReleaseResult>).then((result) => {
      releasing.releasing.delete(requestId);
      // Only an answer its caller took may end the latch: one heard after the call's bound expired
      // has a resend coming (`BaseLock.resendRelease`, same latch id) that must still find it, and a
      // DEL written now would reach Redis before that resend, which would then unlock a second time.
      // An unanswered latch ends by its own PX.
      if (!ticket?.expired) engine.client.del(latchKey).catch(ignore);
      if (result === 0 && this.accounted(this.account) === 0) void this.takeBackSurplus();
      else this.settleAccount(this.account);
      return result;
    }, forgetLater);
  }

  /** @internal Redisson's channel for the kind (messages only wake). */
  abstract override get waitChannel(): string;

  override async isLocked(): Promise<boolean> {
    return (await this.engine.call(this.name, () => this.engine.client.exists(this.redisKey))) === 1;
  }

  override async isHeldByCurrentOwner(): Promise<boolean> {
    return (await this.engine.call(this.name, () => this.engine.client.hexists(this.redisKey, this.ownerId))) === 1;
  }

  override async getHoldCount(): Promise<number> {
    return Number((await this.engine.call(this.name, () => this.engine.client.hget(this.redisKey, this.ownerId))) ?? 0);
  }

  override remainTimeToLive(): Promise<number> {
    return this.engine.call(this.name, () => this.engine.client.pttl(this.redisKey));
  }

  /** @internal */
  override get replicaKey(): string {
    return this.redisKey;
  }
}
