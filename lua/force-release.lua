-- Delete a lock whoever holds it (or only while the hold with a given fencing token holds it), and
-- wake its waiters (a RedLock's, on one of its masters).
-- KEYS[1]  lock key
-- KEYS[2]  unlock channel
-- ARGV[1]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[2]  unlock message
-- ARGV[3]  the fencing token the hold must have on this master (its hash's field fence; '' or
--          absent: whoever holds it)
-- Returns  1 when a lock was deleted, 0 when it was already free (or held with another token)
local lockKey = KEYS[1]
local channel = KEYS[2]
local publishCommand = ARGV[1]
local unlockMessage = ARGV[2]
local expectedToken = ARGV[3] or ''

if expectedToken ~= '' and redis.call('hget', lockKey, 'fence') ~= expectedToken then
  return 0
end
if redis.call('del', lockKey) == 1 then
  redis.call(publishCommand, channel, unlockMessage)
  return 1
end
return 0
