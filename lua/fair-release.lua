-- Release one hold of the fair lock; the last one wakes only the waiter at the head of the line.
-- KEYS[1]  lock hash (see fair-acquire.lua)
-- KEYS[2]  waiting line (list of owner ids)
-- KEYS[3]  waiter deadlines (sorted set, server clock)
-- KEYS[4]  release record: the outcome of this request, kept for ARGV[3] ms so that a resent
--          release returns its first answer instead of "not held"
-- ARGV[1]  owner id
-- ARGV[2]  how long to keep the release record, in ms
-- ARGV[3]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[4]  prefix of a waiter's own channel (the waiter's owner id follows it)
-- ARGV[5]  the lock's shared channel, for plain-lock waiters when nobody is in line
-- ARGV[6]  unlock message
-- ARGV[7]  '' for a plain release; an acquire request id to release only the hold that request
--          granted (see reentrant-release.lua)
-- Returns  nil when the owner does not hold the lock (or that request granted nothing),
--          0 when holds remain (the lease is left as it is: see reentrant-release.lua), 1 when released
local lockKey = KEYS[1]
local lineKey = KEYS[2]
local deadlinesKey = KEYS[3]
local recordKey = KEYS[4]
local ownerId = ARGV[1]
local recordTtlMs = ARGV[2]
local publishCommand = ARGV[3]
local waiterChannelPrefix = ARGV[4]
local sharedChannel = ARGV[5]
local unlockMessage = ARGV[6]
local grantedBy = ARGV[7]
local requestField = ownerId .. ':rq'
local holdKey = lockKey

-- #include release-record-prologue
if grantedBy == '' and redis.call('hexists', lockKey, ownerId) == 0 then
  return nil
end

local outcome
if redis.call('hincrby', lockKey, ownerId, -1) > 0 then
  outcome = 0
else
  redis.call('del', lockKey)
  -- #include fair-wake-next
  outcome = 1
end
if grantedBy == '' then
  redis.call('set', recordKey, outcome, 'px', recordTtlMs)
end
return outcome
