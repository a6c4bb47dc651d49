-- Every waiter in a lock's line whose deadline passed (it stopped retrying: it crashed) leaves the
-- line, wherever it stands.
-- Expects  lineKey, deadlinesKey, seenKey, now
-- Defines  expired (the line entries that left)

local expired = redis.call('zrangebyscore', deadlinesKey, '-inf', now)
for _, entry in ipairs(expired) do
  redis.call('lrem', lineKey, 0, entry)
  redis.call('zrem', deadlinesKey, entry)
  redis.call('hdel', seenKey, entry)
end
