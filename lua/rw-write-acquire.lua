-- Acquire or re-enter the write lock of a read-write lock.
-- KEYS[1]  read-write hash (see rw-read-acquire.lua)
-- KEYS[2]  leases: sorted set owner id -> lease deadline (ms, server clock)
-- KEYS[3]  fence: the last fencing token handed out for this name (see reentrant-acquire.lua); the
--          hash's field fence holds the current write hold's token
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id
-- ARGV[3]  request id: a resent acquire finds its own id applied and does not raise the hold count twice
-- ARGV[4]  how long the fence key outlives its last use, in ms
-- Returns  {token} when acquired or re-entered (a re-entry keeps the hold's token); -3 when the owner holds only the read lock (an upgrade,
--          which would wait forever: refused at once); otherwise the lock's remaining TTL in ms
local rwKey = KEYS[1]
local leasesKey = KEYS[2]
local fenceKey = KEYS[3]
local leaseMs = tonumber(ARGV[1])
local ownerId = ARGV[2]
local requestId = ARGV[3]
local fenceMemoryMs = ARGV[4]
local readField = 'read:' .. ownerId
local requestField = 'rq:' .. ownerId
local UPGRADE_REFUSED = -3

local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- Owners whose lease ran out (crashed readers) lose their holds; everyone else keeps theirs.
for _, expiredId in ipairs(redis.call('zrangebyscore', leasesKey, '-inf', now)) do
  redis.call('hdel', rwKey, 'read:' .. expiredId, 'rq:' .. expiredId)
  if redis.call('hget', rwKey, 'writer') == expiredId then
    redis.call('hdel', rwKey, 'writer', 'writes')
  end
  redis.call('zrem', leasesKey, expiredId)
end
if redis.call('zcard', leasesKey) == 0 then
  redis.call('del', rwKey, leasesKey)
end

local mode = redis.call('hget', rwKey, 'mode')
local granted = false
if mode == false then
  -- max(last + 1, server time in microseconds), as reentrant-acquire.lua
  local token = math.max(tonumber(time[1]) * 1000000 + tonumber(time[2]), (tonumber(redis.call('get', fenceKey)) or 0) + 1)
  local tokenText = string.format('%.0f', token)
  redis.call('set', fenceKey, tokenText, 'px', fenceMemoryMs)
  redis.call('hset', rwKey, 'mode', 'write', 'writer', ownerId, 'writes', 1, requestField, requestId, 'fence', tokenText)
  granted = true
elseif mode == 'write' and redis.call('hget', rwKey, 'writer') == ownerId then
  if redis.call('hget', rwKey, requestField) ~= requestId then
    redis.call('hincrby', rwKey, 'writes', 1)
    redis.call('hset', rwKey, requestField, requestId)
  end
  granted = true
end

if granted then
  redis.call('zadd', leasesKey, now + leaseMs, ownerId)
  local longest = tonumber(redis.call('zrange', leasesKey, -1, -1, 'withscores')[2]) - now
  redis.call('pexpire', rwKey, longest)
  redis.call('pexpire', leasesKey, longest)
  return { tonumber(redis.call('hget', rwKey, 'fence')) or 0 }
end

if mode == 'read' and redis.call('hexists', rwKey, readField) == 1 then
  return UPGRADE_REFUSED
end
return redis.call('pttl', rwKey)
