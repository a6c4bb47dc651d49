-- Layout 'redisson': the fair lock's three keys checked before any write (a lock name is a bare key;
-- docs/redisson-interop.md#names). lockConflict: the lock key N is of another type, or a hash the
-- owner holds no count in whose fields are not a lock's; queueConflict: the queue is not a list or
-- the deadlines not a sorted set. Each is the error reply to return (LockNameConflictError), or nil.
-- Expects  lockKey, queueKey, timeoutsKey, ownerId
-- Defines  keyType, conflict, isLockHash, lockConflict, queueConflict
-- #include redisson-key-guard

local lockConflict = nil
local queueConflict = nil
do
  local lockType = keyType(lockKey)
  if lockType ~= 'none' and lockType ~= 'hash' then
    lockConflict = conflict(lockType, 'lock', lockKey)
  elseif lockType == 'hash' and redis.call('hexists', lockKey, ownerId) == 0 and not isLockHash(lockKey) then
    lockConflict = conflict('hash', 'lock', lockKey)
  end
  local queueType = keyType(queueKey)
  local timeoutsType = keyType(timeoutsKey)
  if queueType ~= 'none' and queueType ~= 'list' then
    queueConflict = conflict(queueType, 'fair-queue', queueKey)
  elseif timeoutsType ~= 'none' and timeoutsType ~= 'zset' then
    queueConflict = conflict(timeoutsType, 'fair-deadlines', timeoutsKey)
  end
end
