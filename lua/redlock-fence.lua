-- Raise a master's fence to the RedLock's token (the largest any granting master handed out), so
-- the next RedLock of this name, which shares at least one master with this one's majority, gets a
-- larger token whatever the masters' clocks say.
-- KEYS[1]  lock hash (see redlock-acquire.lua)
-- KEYS[2]  fence: the last fencing token handed out for this name on this master
-- ARGV[1]  the RedLock's token
-- ARGV[2]  owner id
-- ARGV[3]  the fence key's margin, in ms: it lives until this master's clock passes the raised token
--          (the token may come from a master whose clock is ahead), plus this (see fence-token.lua)
-- Returns  1 when raised (the owner still holds the lock here), 0 otherwise
local lockKey = KEYS[1]
local fenceKey = KEYS[2]
local token = tonumber(ARGV[1])
local ownerId = ARGV[2]
local fenceMemoryMs = ARGV[3]

if redis.call('hexists', lockKey, ownerId) == 0 then
  return 0
end
local time = redis.call('time')
local clock = tonumber(time[1] .. string.format('%06d', tonumber(time[2])))
local raisedToken = math.max(token, tonumber(redis.call('get', fenceKey)) or 0)
local raised = string.format('%.0f', raisedToken)
redis.call('set', fenceKey, raised, 'px', math.max(0, math.ceil((raisedToken - clock) / 1000)) + tonumber(fenceMemoryMs))
redis.call('hset', lockKey, 'fence', raised)
return 1
