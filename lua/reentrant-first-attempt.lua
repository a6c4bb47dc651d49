-- The first attempt of a reentrant-lock acquisition (and a single attempt, waitTime 0): takes the
-- lock when nobody holds it and nobody waits, re-enters a hold of the owner's, and otherwise only
-- answers. It never joins the line: an acquisition that waits joins it with its next attempt
-- (reentrant-acquire.lua, sent right after this one missed). A free lock with a line serves it
-- (line-grant-head: the first live waiter gets it) and is taken by the caller only when nobody
-- live stood there (every entry had left, expired, or belonged to a dead client), so dead waiters
-- never make a single attempt see a free lock as busy. The uncontended path sends no more than it
-- did before the line existed.
-- KEYS[1]  lock hash (see reentrant-acquire.lua)
-- KEYS[2]  waiting line (see reentrant-acquire.lua)
-- KEYS[3]  fence: the last fencing token handed out for this name, kept until the clock passes it (see fence-token.lua)
-- KEYS[4]  waiter deadlines, KEYS[5] waiters' last attempts (see reentrant-acquire.lua)
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id
-- ARGV[3]  request id (see reentrant-acquire.lua)
-- ARGV[4]  the fence key's margin in ms (it lives until the clock passes its token, plus this: see fence-token.lua)
-- ARGV[5]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[6]  unlock message (for waiters of an older version)
-- ARGV[7]  waiter timeout in ms: the longest lease a grant to a waiter starts with
-- ARGV[8]  '1': re-entry only (a body's call chain asking again, docs/owners-and-reentry.md#the-owner-model):
--          re-enter the owner's hold, never start a new one; '' or absent: a plain attempt
-- Returns  {token} when acquired or re-entered, otherwise the lock's TTL in ms (0: free, but others
--          wait for it; -1: held without a TTL); -4 when re-entry only and the owner holds nothing
--          (the hold it would re-enter ended)
local lockKey = KEYS[1]
local lineKey = KEYS[2]
local fenceKey = KEYS[3]
local leaseMs = math.ceil(tonumber(ARGV[1]))
local ownerId = ARGV[2]
local requestId = ARGV[3]
local fenceMemoryMs = ARGV[4]
local deadlinesKey = KEYS[4]
local seenKey = KEYS[5]
local publishCommand = ARGV[5]
local unlockMessage = ARGV[6]
local grantCapMs = ARGV[7]
local reenterOnly = ARGV[8] == '1'
local requestField = ownerId .. ':rq'
-- A first attempt never stands in line: a grant it makes goes to someone else, with its message.
local callerEntry = ''

if reenterOnly then
  if redis.call('hexists', lockKey, ownerId) == 0 then
    return -4
  end
  -- #include lock-reenter
  return { tonumber(redis.call('hget', lockKey, 'fence')) or 0 }
end

-- One call for both keys (how many of them exist).
local busyOrWaited = redis.call('exists', lockKey, lineKey)
local free = busyOrWaited == 0
if busyOrWaited == 1 and redis.call('exists', lockKey) == 0 then
  -- Free, with a line: its first live waiter gets it; nobody live there (line gone): the caller.
  -- #include line-grant-head
  free = not grantedTo and redis.call('exists', lineKey) == 0
end
if free then
  local time = redis.call('time')
  -- #include fence-token
  redis.call('hset', lockKey, ownerId, 1, requestField, requestId, 'fence', tokenText)
  redis.call('pexpire', lockKey, leaseMs)
  return { token }
end

if redis.call('hexists', lockKey, ownerId) == 1 then
  -- #include lock-reenter
  return { tonumber(redis.call('hget', lockKey, 'fence')) or 0 }
end

local ttl = redis.call('pttl', lockKey)
if ttl == -2 then
  return 0
end
return ttl
