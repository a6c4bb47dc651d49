-- Layout 'redisson': delete a lock whoever holds it and wake a waiter: Redisson's forceUnlock of an
-- RLock (DEL, then '0' on its channel; docs/redisson-interop.md#plain-lock), on a RedLock's master
-- too. Only a lock is deleted: a key of another type, or a hash whose fields are not a lock's (an
-- application's key at the name), is refused and kept.
-- KEYS[1]  the lock hash N
-- KEYS[2]  its channel redisson_lock__channel:{N}
-- ARGV[1]  publish command: 'PUBLISH', or 'SPUBLISH' where Redisson uses sharded pub/sub
-- ARGV[2]  unlock message ('0')
-- Returns  1 when a lock was deleted, 0 when there was none; an error reply 'LOCKNAMECONFLICT
--          <type> lock <key>' (nothing written) when N holds something else
local lockKey = KEYS[1]
local channel = KEYS[2]
local publishCommand = ARGV[1]
local unlockMessage = ARGV[2]

-- #include redisson-key-guard
local lockType = keyType(lockKey)
if lockType == 'none' then
  return 0
end
if lockType ~= 'hash' or not isLockHash(lockKey) then
  return conflict(lockType, 'lock', lockKey)
end
redis.call('del', lockKey)
redis.call(publishCommand, channel, unlockMessage)
return 1
