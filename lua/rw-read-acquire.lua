-- Acquire or re-enter the read lock of a read-write lock.
-- KEYS[1]  read-write hash: mode = 'read' | 'write'; writer = the writer's owner id and writes = its
--          hold count (write mode only); read:<owner id> = that owner's read hold count;
--          rq:<owner id> = that owner's last applied acquire request id
-- KEYS[2]  leases: sorted set owner id -> lease deadline in ms on the server clock, one entry per
--          owner holding anything, so a crashed reader's hold ends while the others keep theirs;
--          an owner's entry is its longest hold's (a shorter one never lowers it); the hash and
--          this set expire with the longest lease
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id
-- ARGV[3]  request id: a resent acquire finds its own id applied and does not raise the hold count twice
-- Returns  nil when acquired or re-entered (by readers, or by the writer itself: a downgrade),
--          otherwise the lock's remaining TTL in ms
local rwKey = KEYS[1]
local leasesKey = KEYS[2]
local leaseMs = math.ceil(tonumber(ARGV[1]))
local ownerId = ARGV[2]
local requestId = ARGV[3]
local readField = 'read:' .. ownerId
local requestField = 'rq:' .. ownerId

-- #include server-clock

-- #include rw-drop-expired-owners
if redis.call('zcard', leasesKey) == 0 then
  redis.call('del', rwKey, leasesKey)
end

local mode = redis.call('hget', rwKey, 'mode')
if mode == false or mode == 'read' or redis.call('hget', rwKey, 'writer') == ownerId then
  if mode == false then
    redis.call('hset', rwKey, 'mode', 'read')
  end
  if redis.call('hget', rwKey, requestField) ~= requestId then
    redis.call('hincrby', rwKey, readField, 1)
    redis.call('hset', rwKey, requestField, requestId)
  end
  -- GT: a hold with a shorter lease (a read inside a write) never shortens the owner's lease.
  redis.call('zadd', leasesKey, 'gt', now + leaseMs, ownerId)
  -- #include rw-expire-with-longest-lease
  return nil
end

return redis.call('pttl', rwKey)
