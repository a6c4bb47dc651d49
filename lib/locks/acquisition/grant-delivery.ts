import { LockError, LockShutdownError } from '../../errors';
import { REPLICAS_NOT_SYNCED } from '../../lock.messages';
import { boundedCall } from '../../redis/bounded-call';
import { waitForReplicas } from '../../redis/replica-sync';
import type { HandedGrant } from '../../redis/waiter';
import { leaseDriftMs } from '../../runtime/held-locks';
import { monotonicNow } from '../../monotonic-clock';
import type { Grant } from './contender';
import { DeadlockCheckedWait } from './deadlock-wait';

/** A handed grant whose message names the attempt it follows (see `takeHanded` below). */
type DatedGrant = HandedGrant & { readonly attemptStamp: number };

/**
 * A grant on its way to the caller (docs/architecture.md#holds): one a release handed over (taken
 * only when its message names this join and its latest attempt), confirmed on the replicas when
 * `syncReplicas` asks for it, then delivered; or, when nobody may rely on it any more, given back
 * (the caller cancelled, shutdown began, its lease ended before its reply was handled: then the
 * wait goes on as a new join of the line).
 */
export abstract class GrantDelivery<R> extends DeadlockCheckedWait<R> {
  /** The next round of the wait (see `Acquisition.round`). */
  protected abstract round(): void;

  /** Takes a seat, then the first round (see `Acquisition.takeSeat`). */
  protected abstract takeSeat(): void;

  /**
   * The grant a release handed to this waiter, if it may be used (docs/hand-off-protocol.md): its
   * message carries this join's proof and names the attempt Redis saw last before the grant, which
   * must be the latest attempt Redis answered "busy" or the one still out. One that names an older
   * attempt is dropped: the attempts after it reached Redis after the grant, so one answered since
   * either found it (and holds by its own answer) or found it gone. 'attempt': a grant that cannot
   * be dated (Redis had no stamp), found by an attempt instead.
   */
  protected takeHanded(): DatedGrant | 'attempt' | undefined {
    const handed = this.waiter?.takeGrant();
    if (!handed) return undefined;
    const { attemptStamp, attemptProof } = handed;
    if (attemptStamp === undefined) return 'attempt';
    if (attemptProof !== this.joinProof) return undefined;
    if (attemptStamp !== this.answeredStamp && attemptStamp !== this.sentStamp) return undefined;
    return { ...handed, attemptStamp };
  }

  /** Whether a grant must be confirmed on replicas (`syncReplicas`) before it is delivered. */
  protected get confirmsOnReplicas(): boolean {
    const { contender } = this;
    return contender.engine.options.syncReplicas > 0 && contender.replicaKey !== undefined;
  }

  /**
   * A release handed the lock to this waiter. Its lease began, at the earliest, the server-counted
   * time after the attempt its message names reached Redis, so from that attempt's send time plus
   * that time on this process's clock (a stalled process that hears of it late finds it over, and
   * gives it back). The grant's short lease becomes the full one when the holder confirms it (`held`).
   */
  protected handedOver(handed: DatedGrant): void {
    if (this.ended) return;
    const leaseMs = Math.min(handed.grantLeaseMs, this.leaseMs);
    this.granted({
      fencingToken: handed.fencingToken,
      // Never later than now: the grant was made before its message was heard.
      leaseStartedAt: Math.min(handed.attemptStamp / 1000 + handed.sinceAttemptMs, monotonicNow()),
      grantedLeaseMs: leaseMs < this.leaseMs ? leaseMs : undefined,
    });
  }

  /**
   * A grant: confirmed on the replicas when `syncReplicas` asks for it, then delivered. Nothing is
   * promised before `deliver` checked the caller still wants it and its lease still runs.
   */
  protected granted(grant: Grant): void {
    this.acquired = true;
    const sentAt = grant.leaseStartedAt ?? this.sentAt;
    const { contender } = this;
    const { syncReplicas } = contender.engine.options;
    if (syncReplicas > 0 && contender.replicaKey !== undefined && !this.cancellation?.cancelled && !contender.engine.shuttingDown) {
      this.confirmReplicated(contender.replicaKey, syncReplicas).then(
        () => this.deliver(grant, sentAt),
        (error: unknown) => this.end(true, error),
      );
      return;
    }
    this.deliver(grant, sentAt);
  }

  /**
   * Records the grant as held and resolves, unless nobody may rely on it any more; it is then given
   * back (docs/architecture.md#holds):
   * - the caller cancelled meanwhile (an abort, also during the replicas' WAIT): rejects;
   * - the module's shutdown began: it released what was held then and closes the connections next,
   *   so nobody would release this one: rejects `LockShutdownError`, as a wait cut short;
   * - the lease already ended (the reply was handled late: a GC pause, a stalled event loop, a slow
   *   network), so another owner may be in: the wait goes on as if the lock were busy.
   */
  protected deliver(grant: Grant, sentAt: number): void {
    const { cancellation, contender } = this;
    let refusal: unknown;
    if (this.refusal) refusal = this.refusal;
    else if (cancellation?.cancelled) refusal = cancellation.reason;
    else if (contender.engine.shuttingDown) refusal = new LockShutdownError(contender.name);
    else if (monotonicNow() >= sentAt + (grant.grantedLeaseMs ?? this.leaseMs) - leaseDriftMs(this.leaseMs)) {
      this.acquired = false;
      const retry = (): void => {
        // Refused (or otherwise ended) while the late grant was given back: no new attempt.
        if (this.ended) return;
        this.rejoin();
        if (cancellation?.cancelled) return this.end(true, cancellation.reason);
        if (this.waitMs <= 0 || monotonicNow() >= this.deadline) return this.endWithoutLock();
        if (this.waiter) this.round();
        else this.takeSeat();
      };
      contender.undoGrant(this.requestId).then(retry, retry);
      return;
    }
    if (refusal !== undefined) {
      const settle = (): void => this.end(true, refusal);
      contender.undoGrant(this.requestId).then(settle, settle);
      return;
    }
    this.end(false, contender.held(grant, this.leaseMs, this.options, sentAt));
  }

  /**
   * `syncReplicas`: waits until that many replicas have the acquisition, so a failover is less
   * likely to lose it; when fewer confirm in time, lets go of it again and fails. Bounded: WAIT
   * itself may take `syncReplicasTimeout`, plus one `commandTimeout`.
   */
  protected async confirmReplicated(key: string, syncReplicas: number): Promise<void> {
    const { contender } = this;
    const { engine, name } = contender;
    const { syncReplicasTimeout, commandTimeout } = engine.options;
    let confirmed: number;
    try {
      confirmed = await boundedCall(name, syncReplicasTimeout + commandTimeout, () =>
        waitForReplicas(engine.client, key, syncReplicas, syncReplicasTimeout),
      );
    } catch (error) {
      void contender.undoGrant(this.requestId).catch(() => undefined);
      throw error;
    }
    if (confirmed >= syncReplicas) return;
    await contender.undoGrant(this.requestId).catch(() => undefined);
    throw new LockError(REPLICAS_NOT_SYNCED(name, confirmed, syncReplicas, syncReplicasTimeout));
  }

  /**
   * After giving a late grant back, the wait goes on as a new join of the line: a grant message
   * kept or still on its way names the old entry (or an attempt Redis has answered since) and is
   * never taken (docs/hand-off-protocol.md). The request id stays: an attempt of the old join that
   * runs late finds what it granted under it, and the clean-up gives that back.
   */
  protected rejoin(): void {
    this.outcome = 0;
    this.busyWithoutTtl = 0;
    this.join += 1;
    this.joinProof = undefined;
    if (this.waitNode) this.waitNode.lineSeq = undefined;
    const { waiter } = this;
    waiter?.takeGrant();
    if (waiter && this.lineEntry !== undefined) {
      this.lineEntry = this.contender.lineEntry?.(this.requestId, this.leaseMs, this.join);
      waiter.id = this.lineEntry;
    }
  }
}
