-- The lock is free: if its last grant (field '~grant' of the last-attempts hash = the owner id it
-- went to) is still recorded, the grantee neither released nor gave it back, so its grant (or the
-- hold it made of it) ran out: its process is gone. Its client is marked dead ('~dead:<client id>'
-- = now), and line-live-head skips all of that client's entries together: a crash costs one grant
-- lease, not one per waiter it had in line. A live client's next attempt clears the mark.
-- Expects  seenKey, now
-- Defines  nothing

local failedGrantee = redis.call('hget', seenKey, '~grant')
if failedGrantee then
  redis.call('hdel', seenKey, '~grant')
  local failedClient = string.match(failedGrantee, '^(%S+):%d+$')
  if failedClient then
    redis.call('hset', seenKey, '~dead:' .. failedClient, now)
  end
end
