-- Acquire or re-enter the write lock of a Redisson RReadWriteLock (layout 'redisson'): Redisson's
-- write acquire, effect for effect (docs/redisson-interop.md#read-write), plus a kind guard and the
-- upgrade refusal.
-- KEYS[1]  the lock's hash N (see redisson-read-acquire.lua)
-- ARGV[1]  lease in ms
-- ARGV[2]  the owner's writer field, <owner>:write
-- ARGV[3]  owner id (its reader field): an owner holding only reads cannot wait for the write lock
-- Returns  {count}, the writer field's count after the grant; -3 when the owner holds the read lock
--          and not the write lock (an upgrade: waiting would never end; nothing written); -4 when
--          N is a hash without mode (a plain lock of the same name; nothing written); otherwise the
--          lock's remaining TTL in ms (-1 when it has none or is gone); an error reply
--          'LOCKNAMECONFLICT <type> read-write-lock <key>' (nothing written) when N is of another
--          type, or a hash whose fields are not a lock's (an application hash with a mode)
local rwKey = KEYS[1]
local leaseMs = math.ceil(tonumber(ARGV[1]))
local writerField = ARGV[2]
local ownerId = ARGV[3]

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
  redis.call('hset', rwKey, 'mode', 'write')
  redis.call('hset', rwKey, writerField, 1)
  redis.call('pexpire', rwKey, leaseMs)
  return { 1 }
end

if mode == 'write' and redis.call('hexists', rwKey, writerField) == 1 then
  local count = redis.call('hincrby', rwKey, writerField, 1)
  -- Redisson's write re-entry adds a lease to what is left (never shorter).
  redis.call('pexpire', rwKey, math.max(redis.call('pttl', rwKey), 0) + leaseMs)
  return { count }
end

if mode == 'read' and redis.call('hexists', rwKey, ownerId) == 1 then
  return -3
end

return remainingTtl()
