-- Delete a fair lock whoever holds it, and wake the waiter at the head of its line.
-- KEYS[1]  lock hash (see fair-acquire.lua)
-- KEYS[2]  waiting line (list of owner ids); the line itself stays: its waiters still want the lock
-- KEYS[3]  waiter deadlines (sorted set, server clock)
-- ARGV[1]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[2]  prefix of a waiter's own channel (the waiter's owner id follows it)
-- ARGV[3]  the lock's shared channel, for plain-lock waiters when nobody is in line
-- ARGV[4]  unlock message
-- Returns  1 when a lock was deleted, 0 when it was already free
local lockKey = KEYS[1]
local lineKey = KEYS[2]
local deadlinesKey = KEYS[3]
local publishCommand = ARGV[1]
local waiterChannelPrefix = ARGV[2]
local sharedChannel = ARGV[3]
local unlockMessage = ARGV[4]

if redis.call('del', lockKey) == 0 then
  return 0
end
-- #include fair-wake-next
return 1
