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
local leaseMs = math.ceil(tonumber(ARGV[1]))
local ownerId = ARGV[2]
local requestId = ARGV[3]
local fenceMemoryMs = ARGV[4]
local readField = 'read:' .. ownerId
local requestField = 'rq:' .. ownerId
local UPGRADE_REFUSED = -3

-- #include server-clock

-- #include rw-drop-expired-owners
if redis.call('zcard', leasesKey) == 0 then
  redis.call('del', rwKey, leasesKey)
end

local mode = redis.call('hget', rwKey, 'mode')
local granted = false
if mode == false then
  -- #include fence-token
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
  -- GT: a hold with a shorter lease (a read inside a write) never shortens the owner's lease.
  redis.call('zadd', leasesKey, 'gt', now + leaseMs, ownerId)
  -- #include rw-expire-with-longest-lease
  return { tonumber(redis.call('hget', rwKey, 'fence')) or 0 }
end

if mode == 'read' and redis.call('hexists', rwKey, readField) == 1 then
  return UPGRADE_REFUSED
end
return redis.call('pttl', rwKey)
