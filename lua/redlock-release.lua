-- Release a RedLock on one of its masters (every hold at once: re-entry is counted by the owner's
-- process, see redlock-acquire.lua). RedLock waiters retry rather than subscribe; the message
-- wakes waiters of a plain lock of the same name when a master is also the module's main server.
-- KEYS[1]  lock hash
-- KEYS[2]  unlock channel
-- ARGV[1]  owner id
-- ARGV[2]  unlock message
-- Returns  1 when this owner's lock was deleted, 0 when the owner did not hold it on this master
local lockKey = KEYS[1]
local channel = KEYS[2]
local ownerId = ARGV[1]
local unlockMessage = ARGV[2]

if redis.call('hexists', lockKey, ownerId) == 1 then
  redis.call('del', lockKey)
  redis.call('publish', channel, unlockMessage)
  return 1
end
return 0
