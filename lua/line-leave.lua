-- A waiter gives up (its wait ran out, it was cancelled, the module shuts down): it leaves the line,
-- and gives back the lock if it was handed to it meanwhile (the grant's message may still be on its
-- way, or was never heard); a free lock then goes to the next waiter.
-- KEYS[1]  lock hash, KEYS[2] waiting line, KEYS[3] waiter deadlines, KEYS[4] waiters' last
--          attempts, KEYS[5] fence (see reentrant-acquire.lua)
-- ARGV[1]  the waiter's line entry
-- ARGV[2]  its owner id
-- ARGV[3]  its acquire request id (a grant to it carries this id)
-- ARGV[4]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[5]  unlock message
-- ARGV[6]  waiter timeout in ms: the longest lease a grant to a waiter starts with
-- ARGV[7]  the fence key's margin in ms (it lives until the clock passes its token, plus this: see fence-token.lua)
-- Returns  1 when the waiter was in line or held a grant, 0 otherwise
local lockKey = KEYS[1]
local lineKey = KEYS[2]
local deadlinesKey = KEYS[3]
local seenKey = KEYS[4]
local fenceKey = KEYS[5]
local myEntry = ARGV[1]
local ownerId = ARGV[2]
local requestId = ARGV[3]
local publishCommand = ARGV[4]
local unlockMessage = ARGV[5]
local grantCapMs = ARGV[6]
local fenceMemoryMs = ARGV[7]
local callerEntry = ''
local requestField = ownerId .. ':rq'

-- Its deadline goes; its place in the list stays as a tombstone, popped when it reaches the head
-- (line-live-head): no LREM over the line.
local left = redis.call('zrem', deadlinesKey, myEntry)
redis.call('hdel', seenKey, myEntry)
-- The owner gives its grant back or never got one: either way its client is alive.
if redis.call('hget', seenKey, '~grant') == ownerId then
  redis.call('hdel', seenKey, '~grant')
end

-- Handed the lock (the last request applied for this owner is this acquisition's, or the one the
-- line handed it to: a re-entry of the same owner overwrites the first, not the second): give back
-- that one hold, never one another request of the owner made.
local handedField = ownerId .. ':handed:rq'
local applied = redis.call('hget', lockKey, requestField) == requestId
local handed = redis.call('hget', lockKey, handedField) == requestId
local granted = applied or handed
if granted then
  if applied then redis.call('hdel', lockKey, requestField) end
  if handed then redis.call('hdel', lockKey, handedField) end
  if redis.call('hincrby', lockKey, ownerId, -1) <= 0 then
    redis.call('del', lockKey)
  end
end

if redis.call('exists', lockKey) == 0 and redis.call('exists', lineKey) == 1 then
  -- #include line-grant-head
elseif redis.call('exists', lineKey) == 1 then
  -- #include server-clock
  -- #include line-rearm
end
return (left > 0 or granted) and 1 or 0
