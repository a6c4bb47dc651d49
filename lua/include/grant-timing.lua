-- What a grant message tells its waiter about when the grant was made: the send stamp of the
-- waiter's last attempt that reached Redis before the grant (the waiter's own monotonic clock, in
-- microseconds, as that attempt carried it) and the server ms between that attempt and the grant.
-- The stamp carries the join's proof ('<µs>.<hex>', a random value the waiter only sends in its
-- attempts): a client that may publish on the lock's channels but not read its keys cannot forge it.
-- The waiter dates the grant's lease from stamp + ms, a moment that provably precedes the grant,
-- and drops a message whose stamp is older than its latest answered attempt
-- (docs/hand-off-protocol.md). A record without a stamp (missing, or an older version's) gives
-- '-': the waiter dates nothing from such a message, it attempts and finds its grant that way.
-- Expects  seenRecord (the waiter's last-attempt record '<server ms> <send stamp>[ s]', or false), now
-- Defines  grantTiming ('<send stamp> <ms since>', or '- 0')

local seenAtText, seenStamp = string.match(seenRecord or '', '^(%d+) (%d+%.?%x*) ?s?$')
local grantTiming = seenAtText and (seenStamp .. ' ' .. math.max(0, now - tonumber(seenAtText))) or '- 0'
