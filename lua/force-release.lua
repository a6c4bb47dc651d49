-- Delete a lock whoever holds it, and wake its waiters.
-- KEYS[1]  lock key
-- KEYS[2]  unlock channel
-- ARGV[1]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[2]  unlock message
-- Returns  1 when a lock was deleted, 0 when it was already free
local lockKey = KEYS[1]
local channel = KEYS[2]
local publishCommand = ARGV[1]
local unlockMessage = ARGV[2]

if redis.call('del', lockKey) == 1 then
  redis.call(publishCommand, channel, unlockMessage)
  return 1
end
return 0
