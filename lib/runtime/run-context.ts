/** What `run()` hands to the protected function. */
export interface LockRunContext {
  /** The lock's name (the names, for a multi-lock). */
  readonly name: string | readonly string[];
  /** Aborted with a `LockLostError` if the lock is lost while `fn` runs. */
  readonly signal: AbortSignal;
  /**
   * The acquisition's fencing token: pass it to the storage you write to and let it refuse a smaller
   * one. `undefined` for a read lock and for a multi-lock (see `fencingTokens`).
   */
  readonly fencingToken: number | undefined;
  /** A multi-lock's tokens, by member name (members without a token, such as read locks, are left out). */
  readonly fencingTokens?: Readonly<Record<string, number>>;
}
