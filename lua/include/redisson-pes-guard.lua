-- Layout 'redisson': a semaphore's counter and leases checked before any write (a name is a bare
-- key; docs/redisson-interop.md#semaphores). pesConflict is the error reply to return
-- (LockNameConflictError) when N is not missing or a whole number (another type, or a string
-- that is no number), or {N}:timeout is not missing or a sorted set; otherwise nil. stored is N's
-- value (false when missing), timeoutType the leases' Redis type.
-- Expects  semKey, timeoutKey
-- Defines  keyType, conflict, isLockHash, pesConflict, stored, timeoutType
-- #include redisson-key-guard

local pesConflict = nil
local stored = redis.pcall('get', semKey)
local timeoutType = keyType(timeoutKey)
if type(stored) == 'table' then
  pesConflict = conflict(keyType(semKey), 'permit-counter', semKey)
elseif stored ~= false and not string.match(stored, '^%-?%d+$') then
  pesConflict = conflict('string', 'permit-counter', semKey)
elseif timeoutType ~= 'none' and timeoutType ~= 'zset' then
  pesConflict = conflict(timeoutType, 'permit-leases', timeoutKey)
end
