/**
 * What this process accounts for, per lock identity and owner, beyond the holds it recorded: attempts
 * sent and not answered yet, and grants answered and not yet recorded or given back
 * (docs/redisson-interop.md#hold-counts). In Redisson's layout a hold is only a count in the owner's
 * field, with no request ids: Redis's count above `recorded + pending + inFlight` is a surplus (a
 * resent or abandoned attempt that granted) that nobody will release, and one below it means a
 * counted hold had ended in Redis.
 */
export interface HoldAccount {
  inFlight: number;
  pending: number;
  /**
   * Releases of the owner's holds sent and not answered yet (by request id): `unlock()` counted their
   * hold off already, but Redis may not have run them (no answer, or a refusal such as `-BUSY` that
   * `resendRelease` answers with a resend). Their counts are still accounted for: a take-back that
   * removed one would make the release's resend remove a second.
   */
  releasing: Set<string>;
}

export class HoldAccounts {
  private readonly accounts = new Map<string, HoldAccount>();

  /** The account of `identity` and `ownerId` (made on first use, dropped once empty: see `settle`). */
  of(identity: string, ownerId: string): HoldAccount {
    const key = `${identity}\n${ownerId}`;
    let account = this.accounts.get(key);
    if (!account) {
      account = { inFlight: 0, pending: 0, releasing: new Set() };
      this.accounts.set(key, account);
    }
    return account;
  }

  /** Forgets an account with nothing in it (a busy lock's waiters would otherwise leave one each). */
  settle(identity: string, ownerId: string, account: HoldAccount): void {
    if (account.inFlight === 0 && account.pending === 0 && account.releasing.size === 0) this.accounts.delete(`${identity}\n${ownerId}`);
  }

  /** Accounts open now (tests: none may be left behind). */
  get size(): number {
    return this.accounts.size;
  }
}
