-- The ids before the first live waiter of a semaphore's line leave the list: tombstones (a waiter
-- that left, was granted, or whose deadline was dropped: it has no deadline) and waiters whose
-- deadline passed. At most 500 per script, so its work stays bounded whatever the line holds
-- (docs/hand-off-protocol.md#bounded-work-in-redis); the next script goes on from there.
-- Expects  semKey, lineKey, deadlinesKey, now
-- Defines  headPopped (how many ids left the list)

local headPopped = 0
while headPopped < 500 do
  local head = redis.call('lindex', lineKey, 0)
  if not head then break end
  local deadline = tonumber(redis.call('zscore', deadlinesKey, head))
  if deadline and deadline > now then break end
  redis.call('lpop', lineKey)
  if deadline then
    redis.call('zrem', deadlinesKey, head)
    redis.call('hdel', semKey, 'w:' .. head, 'l:' .. head, 's:' .. head)
  end
  headPopped = headPopped + 1
end
