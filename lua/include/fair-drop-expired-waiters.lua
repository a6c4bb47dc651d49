-- Every waiter of a fair lock whose deadline passed (it stopped refreshing it: it crashed) leaves
-- the line, wherever it stands.
-- Expects  lineKey, deadlinesKey, now
-- Defines  expired (the owner ids that left)

local expired = redis.call('zrangebyscore', deadlinesKey, '-inf', now)
for _, waiterId in ipairs(expired) do
  redis.call('lrem', lineKey, 0, waiterId)
  redis.call('zrem', deadlinesKey, waiterId)
end
