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

-- #include server-clock
-- #include fair-drop-expired-waiters

-- #include fair-rearm-line
if latest[1] ~= nil and wasHead and redis.call('exists', lockKey) == 0 then
  redis.call(publishCommand, waiterChannelPrefix .. redis.call('lindex', lineKey, 0), unlockMessage)
end
return removed > 0 and 1 or 0
