-- Delete a Redisson RReadWriteLock held in the given mode, whoever holds it, and wake its waiters:
-- Redisson's forceUnlock of the read or write lock (docs/redisson-interop.md#read-write).
-- KEYS[1]  the lock's hash N (see redisson-read-acquire.lua)
-- KEYS[2]  the lock's channel redisson_rwlock:{N}
-- ARGV[1]  the mode it must be held in: 'read' or 'write'
-- ARGV[2]  publish command: 'PUBLISH' or 'SPUBLISH'
-- Returns  1 when the lock was held in that mode and deleted (waiters woken: 0 after a read, 1
--          after a write), 0 otherwise; an error reply 'LOCKNAMECONFLICT <type> read-write-lock
--          <key>' (nothing written) when N is of another type or a hash whose fields are not a lock's
local rwKey = KEYS[1]
local channel = KEYS[2]
local mode = ARGV[1]
local publishCommand = ARGV[2]

-- #include redisson-key-guard
local rwType = keyType(rwKey)
if rwType == 'none' then
  return 0
end
if rwType ~= 'hash' or not isLockHash(rwKey) then
  return conflict(rwType, 'read-write-lock', rwKey)
end
if redis.call('hget', rwKey, 'mode') == mode then
  redis.call('del', rwKey)
  redis.call(publishCommand, channel, mode == 'write' and '1' or '0')
  return 1
end
return 0
