/**
 * When a hold with fencing token `token` began, in ms on the server's clock: a token is
 * `max(last token + 1, server time in µs)` at the grant (lua/include/fence-token.lua), so its ms are
 * the grant's unless the clock was behind the name's last token (a step back, or a burst within one
 * µs). Never after `serverTime` (a token raised past a clock that stepped back). Derived, not stored:
 * the uncontended acquire path writes nothing for it (docs/operations.md#who-holds-what-inspect-and-list).
 */
export function heldSinceOfToken(token: number | undefined, serverTime: number): number | undefined {
  if (token === undefined || !Number.isFinite(token) || token <= 0) return undefined;
  return Math.min(Math.floor(token / 1000), serverTime);
}

/** A hold's recorded start (a read hold's `since:<owner id>`), or undefined when none was recorded. */
export function recordedHeldSince(value: unknown): number | undefined {
  if (value === null || value === undefined || value === '' || value === false) return undefined;
  const since = Number(value);
  return Number.isFinite(since) && since > 0 ? since : undefined;
}
