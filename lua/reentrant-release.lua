-- Release one hold of the reentrant lock.
-- KEYS[1]  lock hash (see reentrant-acquire.lua)
-- KEYS[2]  unlock channel
-- KEYS[3]  release record: the outcome of this request, kept for ARGV[3] ms so that a resent
--          release returns its first answer instead of "not held"
-- ARGV[1]  owner id
-- ARGV[2]  how long to keep the release record, in ms
-- ARGV[3]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[4]  unlock message
-- ARGV[5]  '' for a plain release; an acquire request id to release only the hold that request
--          granted (an acquisition abandoned while its reply was unknown: no phantom hold remains)
-- Returns  nil when the owner does not hold the lock (or that request granted nothing),
--          0 when holds remain (the lease is left as it is: the remaining holds' leases are in
--          it), 1 when released
local lockKey = KEYS[1]
local channel = KEYS[2]
local recordKey = KEYS[3]
local ownerId = ARGV[1]
local recordTtlMs = ARGV[2]
local publishCommand = ARGV[3]
local unlockMessage = ARGV[4]
local grantedBy = ARGV[5]
local requestField = ownerId .. ':rq'
local holdKey = lockKey

-- #include release-record-prologue

local holds = tonumber(redis.call('hget', lockKey, ownerId))
if not holds then
  return nil
end
local outcome
if holds > 1 then
  redis.call('hset', lockKey, ownerId, holds - 1)
  outcome = 0
else
  redis.call('del', lockKey)
  redis.call(publishCommand, channel, unlockMessage)
  outcome = 1
end
if grantedBy == '' then
  redis.call('set', recordKey, outcome, 'px', recordTtlMs)
end
return outcome
