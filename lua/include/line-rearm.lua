-- Re-arm a lock's line after it changed.
-- Expects  lineKey, deadlinesKey, seenKey, now
-- Defines  latest ({entry, deadline} of the waiter to time out last; empty when the line is gone)

-- The line's keys live exactly as long as its latest deadline: dead waiters leave no garbage.
local latest = redis.call('zrange', deadlinesKey, -1, -1, 'withscores')
if latest[1] == nil then
  redis.call('del', lineKey, deadlinesKey, seenKey)
else
  local ttl = math.max(1, math.ceil(tonumber(latest[2]) - now))
  redis.call('pexpire', lineKey, ttl)
  redis.call('pexpire', deadlinesKey, ttl)
  redis.call('pexpire', seenKey, ttl)
end
