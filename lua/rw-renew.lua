-- Renew the lease of everything one owner holds of a read-write lock (watchdog).
-- KEYS[1]  read-write hash (see rw-read-acquire.lua)
-- KEYS[2]  leases: sorted set owner id -> lease deadline (ms, server clock)
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id
-- Returns  1 when renewed, 0 when the owner holds nothing any more (its hold was lost)
local rwKey = KEYS[1]
local leasesKey = KEYS[2]
local leaseMs = tonumber(ARGV[1])
local ownerId = ARGV[2]

local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- Owners whose lease ran out (crashed readers) lose their holds; this is where a crashed reader
-- disappears while the live readers renew theirs.
for _, expiredId in ipairs(redis.call('zrangebyscore', leasesKey, '-inf', now)) do
  redis.call('hdel', rwKey, 'read:' .. expiredId, 'rq:' .. expiredId)
  if redis.call('hget', rwKey, 'writer') == expiredId then
    redis.call('hdel', rwKey, 'writer', 'writes')
  end
  redis.call('zrem', leasesKey, expiredId)
end

local holds = redis.call('hexists', rwKey, 'read:' .. ownerId) == 1 or redis.call('hget', rwKey, 'writer') == ownerId
if holds then
  redis.call('zadd', leasesKey, now + leaseMs, ownerId)
else
  redis.call('zrem', leasesKey, ownerId)
end

if redis.call('zcard', leasesKey) == 0 then
  redis.call('del', rwKey, leasesKey)
else
  local longest = tonumber(redis.call('zrange', leasesKey, -1, -1, 'withscores')[2]) - now
  redis.call('pexpire', rwKey, longest)
  redis.call('pexpire', leasesKey, longest)
end
return holds and 1 or 0
