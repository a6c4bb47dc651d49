-- Release one read hold of a read-write lock; the last reader out frees the lock: it goes to the
-- head of the line when someone waits there (rw-grant-line), else one waiter on the channel is
-- woken (only writers wait while it is held for reading).
-- KEYS[1]  read-write hash (see rw-read-acquire.lua)
-- KEYS[2]  leases: sorted set owner id -> lease deadline (ms, server clock)
-- KEYS[3]  unlock channel
-- KEYS[4]  release record: the outcome of this request, kept for ARGV[2] ms so that a resent
--          release returns its first answer instead of "not held"
-- KEYS[5]  waiting line, KEYS[6] waiter deadlines, KEYS[7] waiters' last attempts, KEYS[8] fence
--          (see rw-read-acquire.lua)
-- ARGV[1]  owner id
-- ARGV[2]  how long to keep the release record, in ms
-- ARGV[3]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[4]  unlock message that wakes one waiter
-- ARGV[5]  '' for a plain release; an acquire request id to release only the hold that request
--          granted (see reentrant-release.lua)
-- ARGV[6]  waiter timeout in ms: the longest lease a grant to a waiter starts with
-- ARGV[7]  the fence key's margin in ms (it lives until the clock passes its token, plus this: see fence-token.lua)
-- ARGV[8]  the read episode of the hold being released (its since:<owner id>, as the grant answered
--          it; '' when unknown): a read hold of another episode is not released
-- Returns  nil when the owner holds no read lock (and no write lock); -1 when it holds no read lock
--          but holds the write lock; 0 when the owner still holds something; 1 when it holds nothing more
-- #include rw-release-start
local wakeOneMessage = ARGV[4]

local isWriter = redis.call('hget', rwKey, 'writer') == ownerId
local heldEpisode = ARGV[8] or ''
-- One call for the count and the episode it belongs to.
local readState = redis.call('hmget', rwKey, readField, 'since:' .. ownerId)
local count = tonumber(readState[1])
if count ~= nil and heldEpisode ~= '' and readState[2] ~= heldEpisode then
  -- That hold's episode ended: never a read hold of a later one.
  return nil
end
if count == nil then
  if isWriter then
    return HOLDS_OTHER_MODE
  end
  return nil
end

local outcome = 0
if count > 1 then
  redis.call('hset', rwKey, readField, count - 1)
else
  redis.call('hdel', rwKey, readField, 'since:' .. ownerId)
  if not isWriter then
    redis.call('hdel', rwKey, requestField)
    redis.call('zrem', leasesKey, ownerId)
    outcome = 1
  end
end

-- #include rw-rearm
-- #include rw-serve-line
if emptied and wakeChannel then
  redis.call(publishCommand, channel, wakeOneMessage)
end
if grantedBy == '' then
  redis.call('set', recordKey, outcome, 'px', recordTtlMs)
end
return outcome
