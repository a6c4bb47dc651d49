-- Waiters in a lock's line whose deadline passed (they stopped retrying: they crashed) leave it,
-- oldest deadlines first and at most 250 per script: their deadline and last-attempt time go, and
-- their place in the line list stays as a tombstone (an entry without a deadline), which is popped
-- when it reaches the head (line-live-head). No LREM over the line: a script's work stays bounded
-- whatever the line holds (docs/hand-off-protocol.md#bounded-work-in-redis); the expired entries beyond the
-- 250 go in the scripts that follow, and line-live-head never serves an entry whose deadline passed.
-- Expects  lineKey, deadlinesKey, seenKey, now
-- Defines  expired (the line entries that left)

local expired = redis.call('zrangebyscore', deadlinesKey, '-inf', now, 'limit', 0, 250)
for _, entry in ipairs(expired) do
  redis.call('zrem', deadlinesKey, entry)
  redis.call('hdel', seenKey, entry)
end
