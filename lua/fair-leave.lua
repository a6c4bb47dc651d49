-- A waiter gives up (its waitTime ran out): it leaves the line, and if it stood at the head of the
-- line of a free lock, the next waiter is woken instead of waiting for the leaver's deadline.
-- KEYS[1]  lock hash (see fair-acquire.lua)
-- KEYS[2]  waiting line (list of owner ids)
-- KEYS[3]  waiter deadlines (sorted set, server clock)
-- ARGV[1]  owner id of the leaving waiter
-- ARGV[2]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[3]  prefix of a waiter's own channel (the waiter's owner id follows it)
-- ARGV[4]  unlock message
-- Returns  1 when the waiter was in line, 0 otherwise
local lockKey = KEYS[1]
local lineKey = KEYS[2]
local deadlinesKey = KEYS[3]
local ownerId = ARGV[1]
local publishCommand = ARGV[2]
local waiterChannelPrefix = ARGV[3]
local unlockMessage = ARGV[4]

local wasHead = redis.call('lindex', lineKey, 0) == ownerId
local removed = redis.call('lrem', lineKey, 0, ownerId)
redis.call('zrem', deadlinesKey, ownerId)

local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local expired = redis.call('zrangebyscore', deadlinesKey, '-inf', now)
for _, waiterId in ipairs(expired) do
  redis.call('lrem', lineKey, 0, waiterId)
  redis.call('zrem', deadlinesKey, waiterId)
end

local latest = redis.call('zrange', deadlinesKey, -1, -1, 'withscores')
if latest[1] == nil then
  redis.call('del', lineKey, deadlinesKey)
else
  local ttl = math.max(1, tonumber(latest[2]) - now)
  redis.call('pexpire', lineKey, ttl)
  redis.call('pexpire', deadlinesKey, ttl)
  if wasHead and redis.call('exists', lockKey) == 0 then
    redis.call(publishCommand, waiterChannelPrefix .. redis.call('lindex', lineKey, 0), unlockMessage)
  end
end
return removed > 0 and 1 or 0
