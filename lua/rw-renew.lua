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

-- #include server-clock

-- This is where a crashed reader disappears while the live readers renew theirs.
-- #include rw-drop-expired-owners

local holds = redis.call('hexists', rwKey, 'read:' .. ownerId) == 1 or redis.call('hget', rwKey, 'writer') == ownerId
if holds then
  redis.call('zadd', leasesKey, now + leaseMs, ownerId)
else
  redis.call('zrem', leasesKey, ownerId)
end

-- #include rw-rearm
return holds and 1 or 0
