-- Take one holder's permits back by force (an operator's release), only while that holder still
-- holds them with the given fencing token, and grant the freed permits to the waiters at the head
-- of the line that they now admit (semaphore-grant-line, as a release does). The holder learns it
-- at its next renewal (its permits are lost).
-- KEYS[1]  semaphore hash (see semaphore-acquire.lua)
-- KEYS[2]  holder leases (sorted set permit id -> lease deadline, server clock)
-- KEYS[3]  waiting line (list of permit ids)
-- KEYS[4]  waiter deadlines (sorted set permit id -> deadline, server clock)
-- KEYS[5]  channel on which freed permits are granted to (or wake) the waiters they admit
-- KEYS[6]  fence: the last fencing token handed out for this semaphore (grants take new ones)
-- ARGV[1]  permit id of the holder; '' to find it by its token among the live holders (one look per
--          holder: at most the semaphore's limit, as each holder holds a permit at least)
-- ARGV[2]  the fencing token the holder's permits must have (its f:<permit id>)
-- ARGV[3]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[4]  waiter timeout in ms: the longest lease a grant to a waiter starts with
-- ARGV[5]  the fence key's margin in ms (it lives until the clock passes its token, plus this: see fence-token.lua)
-- Returns  1 when the holder's permits were taken back, 0 when no live holder (with that permit id)
--          holds permits with that token
local semKey = KEYS[1]
local leasesKey = KEYS[2]
local lineKey = KEYS[3]
local deadlinesKey = KEYS[4]
local channel = KEYS[5]
local fenceKey = KEYS[6]
local permitId = ARGV[1]
local expectedToken = ARGV[2]
local publishCommand = ARGV[3]
local grantCapMs = ARGV[4]
local fenceMemoryMs = ARGV[5]
local skipId = ''

-- #include server-clock

if permitId == '' then
  for _, id in ipairs(redis.call('zrangebyscore', leasesKey, '(' .. string.format('%.0f', now), '+inf')) do
    if redis.call('hget', semKey, 'f:' .. id) == expectedToken then
      permitId = id
      break
    end
  end
  if permitId == '' then
    return 0
  end
end
local deadline = tonumber(redis.call('zscore', leasesKey, permitId))
if redis.call('hget', semKey, 'f:' .. permitId) ~= expectedToken or not deadline or deadline <= now then
  return 0
end
local taken = tonumber(redis.call('hget', semKey, 'o:' .. permitId)) or 0
redis.call('hdel', semKey, 'o:' .. permitId, 'f:' .. permitId)
redis.call('zrem', leasesKey, permitId)
redis.call('hincrby', semKey, 'used', -taken)

-- #include semaphore-drop-expired
-- #include semaphore-line-head

-- #include semaphore-grant-line

-- #include semaphore-rearm

return 1
