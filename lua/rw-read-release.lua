-- Release one read hold of a read-write lock; the last reader out frees the lock and wakes one waiter
-- (only writers wait while it is held for reading).
-- KEYS[1]  read-write hash (see rw-read-acquire.lua)
-- KEYS[2]  leases: sorted set owner id -> lease deadline (ms, server clock)
-- KEYS[3]  unlock channel
-- KEYS[4]  release record: the outcome of this request, kept for ARGV[2] ms so that a resent
--          release returns its first answer instead of "not held"
-- ARGV[1]  owner id
-- ARGV[2]  how long to keep the release record, in ms
-- ARGV[3]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[4]  unlock message that wakes one waiter
-- ARGV[5]  '' for a plain release; an acquire request id to release only the hold that request
--          granted (see reentrant-release.lua)
-- Returns  nil when the owner holds no read lock (and no write lock); -1 when it holds no read lock
--          but holds the write lock; 0 when the owner still holds something; 1 when it holds nothing more
local rwKey = KEYS[1]
local leasesKey = KEYS[2]
local channel = KEYS[3]
local recordKey = KEYS[4]
local ownerId = ARGV[1]
local recordTtlMs = ARGV[2]
local publishCommand = ARGV[3]
local wakeOneMessage = ARGV[4]
local grantedBy = ARGV[5]
local readField = 'read:' .. ownerId
local requestField = 'rq:' .. ownerId
local HOLDS_OTHER_MODE = -1

if grantedBy == '' then
  local recorded = redis.call('get', recordKey)
  if recorded then
    return tonumber(recorded)
  end
else
  -- Undo only what that acquire request granted. Idempotent by itself (the request id is cleared)
  -- and never recorded: if ioredis resends the acquire and then this undo, the undo applies again.
  if redis.call('hget', rwKey, requestField) ~= grantedBy then
    return nil
  end
  redis.call('hdel', rwKey, requestField)
end

local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

-- Owners whose lease ran out (crashed readers) lose their holds; everyone else keeps theirs.
for _, expiredId in ipairs(redis.call('zrangebyscore', leasesKey, '-inf', now)) do
  redis.call('hdel', rwKey, 'read:' .. expiredId, 'rq:' .. expiredId)
  if redis.call('hget', rwKey, 'writer') == expiredId then
    redis.call('hdel', rwKey, 'writer', 'writes')
  end
  redis.call('zrem', leasesKey, expiredId)
end

local isWriter = redis.call('hget', rwKey, 'writer') == ownerId
local count = tonumber(redis.call('hget', rwKey, readField))
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
  redis.call('hdel', rwKey, readField)
  if not isWriter then
    redis.call('hdel', rwKey, requestField)
    redis.call('zrem', leasesKey, ownerId)
    outcome = 1
  end
end

if redis.call('zcard', leasesKey) == 0 then
  redis.call('del', rwKey, leasesKey)
  redis.call(publishCommand, channel, wakeOneMessage)
else
  local longest = tonumber(redis.call('zrange', leasesKey, -1, -1, 'withscores')[2]) - now
  redis.call('pexpire', rwKey, longest)
  redis.call('pexpire', leasesKey, longest)
end
if grantedBy == '' then
  redis.call('set', recordKey, outcome, 'px', recordTtlMs)
end
return outcome
