-- Renew the lease of everything one owner holds of a read-write lock (watchdog), or set it
-- (minHoldTime).
-- KEYS[1]  read-write hash (see rw-read-acquire.lua)
-- KEYS[2]  leases: sorted set owner id -> lease deadline (ms, server clock)
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id
-- ARGV[3]  '1': extend only (see reentrant-renew.lua); otherwise the lease becomes exactly ARGV[1]
-- ARGV[4]  '1': the owner's process counts a write hold, so the owner must still be the writer (a
--          read hold of it left in Redis does not keep a write that ended); absent or '0': any hold
-- Returns  1 when renewed, 0 when the owner holds nothing any more (its hold was lost), or no longer
--          the write lock that ARGV[4] asks for (nothing renewed; its read holds keep their lease)
local rwKey = KEYS[1]
local leasesKey = KEYS[2]
local leaseMs = math.ceil(tonumber(ARGV[1]))
local ownerId = ARGV[2]
local extendOnly = ARGV[3] == '1'
local writerRequired = ARGV[4] == '1'

-- #include server-clock

-- This is where a crashed reader disappears while the live readers renew theirs.
-- #include rw-drop-expired-owners

local holds
if writerRequired then
  holds = redis.call('hget', rwKey, 'writer') == ownerId
else
  holds = redis.call('hexists', rwKey, 'read:' .. ownerId) == 1 or redis.call('hget', rwKey, 'writer') == ownerId
end
if holds then
  if extendOnly then
    redis.call('zadd', leasesKey, 'gt', now + leaseMs, ownerId)
  else
    redis.call('zadd', leasesKey, now + leaseMs, ownerId)
  end
elseif not (writerRequired and redis.call('hexists', rwKey, 'read:' .. ownerId) == 1) then
  redis.call('zrem', leasesKey, ownerId)
end

-- #include rw-rearm
return holds and 1 or 0
