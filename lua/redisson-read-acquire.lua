-- Acquire or re-enter the read lock of a Redisson RReadWriteLock (layout 'redisson'): Redisson's
-- read acquire, effect for effect (docs/redisson-interop.md#read-write), plus a kind guard.
-- KEYS[1]  the lock's hash N: mode = 'read' | 'write'; reader <owner> -> hold count; writer
--          <owner>:write -> hold count
-- KEYS[2]  this owner's timeout prefix {N}:<owner>:rwlock_timeout: one key <prefix>:<k> (string 1,
--          PX lease) per read hold k = 1..count, which a read unlock of any client reads
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id (the reader's field)
-- ARGV[3]  the owner's writer field, <owner>:write (a read inside the owner's own write: a downgrade)
-- Returns  {count}, the owner's read hold count after the grant; -4 when N is a hash without mode
--          (a plain lock of the same name: Redisson would grant beside it, we wait, and write
--          nothing); otherwise the lock's remaining TTL in ms (-1 when it has none or is gone); an
--          error reply 'LOCKNAMECONFLICT <type> read-write-lock <key>' (nothing written) when N is of
--          another type, or a hash whose fields are not a lock's (an application hash with a mode)
local rwKey = KEYS[1]
local timeoutPrefix = KEYS[2]
local leaseMs = math.ceil(tonumber(ARGV[1]))
local ownerId = ARGV[2]
local writerField = ARGV[3]

local function remainingTtl()
  local ttl = redis.call('pttl', rwKey)
  if ttl <= 0 then return -1 end
  return ttl
end

-- #include redisson-key-guard
local rwType = keyType(rwKey)
if rwType ~= 'none' and (rwType ~= 'hash' or not isLockHash(rwKey)) then
  return conflict(rwType, 'read-write-lock', rwKey)
end
local mode = false
if rwType == 'hash' then
  mode = redis.call('hget', rwKey, 'mode')
end
if mode == false then
  if rwType == 'hash' then
    return -4
  end
  redis.call('hset', rwKey, 'mode', 'read')
  redis.call('hset', rwKey, ownerId, 1)
  redis.call('set', timeoutPrefix .. ':1', 1)
  redis.call('pexpire', timeoutPrefix .. ':1', leaseMs)
  redis.call('pexpire', rwKey, leaseMs)
  return { 1 }
end

if mode == 'read' or (mode == 'write' and redis.call('hexists', rwKey, writerField) == 1) then
  local count = redis.call('hincrby', rwKey, ownerId, 1)
  local holdKey = timeoutPrefix .. ':' .. count
  redis.call('set', holdKey, 1)
  redis.call('pexpire', holdKey, leaseMs)
  -- Redisson's own re-entry is extend-only: the hash lives as long as its longest hold.
  redis.call('pexpire', rwKey, math.max(redis.call('pttl', rwKey), leaseMs))
  return { count }
end

return remainingTtl()
