-- A read-write lock's waiter gives up (its wait ran out, it was cancelled, the module shuts down):
-- it leaves the line, and gives back the hold a grant made to its request meanwhile (the grant's
-- message may still be on its way, or was never heard); the lock then goes onward in line order.
-- KEYS[1]  read-write hash (see rw-read-acquire.lua)
-- KEYS[2]  leases: sorted set owner id -> lease deadline (ms, server clock)
-- KEYS[3]  unlock channel
-- KEYS[4]  waiting line, KEYS[5] waiter deadlines, KEYS[6] waiters' last attempts, KEYS[7] fence
--          (see rw-read-acquire.lua)
-- ARGV[1]  the waiter's line entry (its last letter, r or w, is the mode it waited for)
-- ARGV[2]  its owner id
-- ARGV[3]  its acquire request id (a grant to it carries this id)
-- ARGV[4]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[5]  unlock message that wakes every waiter (the lock is free and nobody is in line)
-- ARGV[6]  waiter timeout in ms: the longest lease a grant to a waiter starts with
-- ARGV[7]  the fence key's margin in ms (it lives until the clock passes its token, plus this: see fence-token.lua)
-- Returns  1 when the waiter was in line or held a grant, 0 otherwise
local rwKey = KEYS[1]
local leasesKey = KEYS[2]
local channel = KEYS[3]
local lineKey = KEYS[4]
local deadlinesKey = KEYS[5]
local seenKey = KEYS[6]
local fenceKey = KEYS[7]
local myEntry = ARGV[1]
local ownerId = ARGV[2]
local requestId = ARGV[3]
local publishCommand = ARGV[4]
local wakeAllMessage = ARGV[5]
local grantCapMs = ARGV[6]
local fenceMemoryMs = ARGV[7]
local readField = 'read:' .. ownerId
local requestField = 'rq:' .. ownerId

-- Its deadline goes; its place in the list stays as a tombstone, popped when it reaches the head
-- (line-live-head): no LREM over the line.
local left = redis.call('zrem', deadlinesKey, myEntry)
redis.call('hdel', seenKey, myEntry)
-- The owner gives its grant back or never got one: either way its client is alive.
if redis.call('hget', seenKey, '~grant') == ownerId then
  redis.call('hdel', seenKey, '~grant')
end

-- #include server-clock
-- #include rw-drop-expired-owners

-- Handed the lock (the last request applied for this owner is this acquisition's, or the one the
-- line handed it to, which a re-entry of the same owner does not overwrite): give that hold back.
local granted = false
local handedField = 'handed:rq:' .. ownerId
local applied = redis.call('hget', rwKey, requestField) == requestId
local handedHere = redis.call('hget', rwKey, handedField) == requestId
if applied or handedHere then
  local isWriter = redis.call('hget', rwKey, 'writer') == ownerId
  local readsToo = redis.call('hexists', rwKey, readField) == 1
  if string.sub(myEntry, -1) == 'w' and isWriter then
    granted = true
    if redis.call('hincrby', rwKey, 'writes', -1) <= 0 then
      redis.call('hdel', rwKey, 'writer', 'writes')
      if readsToo then
        redis.call('hset', rwKey, 'mode', 'read')
      else
        redis.call('zrem', leasesKey, ownerId)
      end
    end
  elseif string.sub(myEntry, -1) == 'r' and readsToo then
    granted = true
    if redis.call('hincrby', rwKey, readField, -1) <= 0 then
      redis.call('hdel', rwKey, readField, 'since:' .. ownerId)
      if not isWriter then
        redis.call('zrem', leasesKey, ownerId)
      end
    end
  end
  if granted then
    if applied then redis.call('hdel', rwKey, requestField) end
    if handedHere then redis.call('hdel', rwKey, handedField) end
  end
end

-- #include rw-rearm
-- #include rw-serve-line
if granted and emptied and wakeChannel then
  redis.call(publishCommand, channel, wakeAllMessage)
end
return (left > 0 or granted) and 1 or 0
