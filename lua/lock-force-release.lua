-- Delete a reentrant (or fair) lock whoever holds it (or only while the hold with a given fencing
-- token holds it), and hand it to the first live waiter in line (or wake the lock's channel when
-- nobody is in line).
-- KEYS[1]  lock hash, KEYS[2] waiting line, KEYS[3] waiter deadlines, KEYS[4] waiters' last
--          attempts, KEYS[5] fence (see reentrant-acquire.lua)
-- ARGV[1]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[2]  unlock message
-- ARGV[3]  waiter timeout in ms: the longest lease a grant to a waiter starts with
-- ARGV[4]  the fence key's margin in ms (it lives until the clock passes its token, plus this: see fence-token.lua)
-- ARGV[5]  the fencing token the hold must have ('' or absent: whoever holds it); the lock hash
--          exists only while held, its field fence is the current hold's token
-- Returns  1 when a lock was deleted, 0 when it was already free (or held with another token)
local lockKey = KEYS[1]
local lineKey = KEYS[2]
local deadlinesKey = KEYS[3]
local seenKey = KEYS[4]
local fenceKey = KEYS[5]
local publishCommand = ARGV[1]
local unlockMessage = ARGV[2]
local grantCapMs = ARGV[3]
local fenceMemoryMs = ARGV[4]
local expectedToken = ARGV[5] or ''
local callerEntry = ''

if expectedToken ~= '' and redis.call('hget', lockKey, 'fence') ~= expectedToken then
  return 0
end
if redis.call('del', lockKey) == 0 then
  return 0
end
if redis.call('exists', lineKey) == 1 then
  -- Whoever held it was removed by force, not by a crash (see line-failed-grantee).
  redis.call('hdel', seenKey, '~grant')
  -- #include line-grant-head
else
  redis.call(publishCommand, lockKey .. ':channel', unlockMessage)
end
return 1
