-- Delete a read-write lock held in the given mode, whoever holds it, and wake every waiter.
-- KEYS[1]  read-write hash (see rw-read-acquire.lua)
-- KEYS[2]  leases: sorted set owner id -> lease deadline (ms, server clock)
-- KEYS[3]  unlock channel
-- ARGV[1]  mode the lock must be held in: 'read' or 'write'
-- ARGV[2]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[3]  unlock message that wakes every waiter
-- Returns  1 when the lock was held in that mode and deleted, 0 otherwise
local rwKey = KEYS[1]
local leasesKey = KEYS[2]
local channel = KEYS[3]
local mode = ARGV[1]
local publishCommand = ARGV[2]
local wakeAllMessage = ARGV[3]

if redis.call('hget', rwKey, 'mode') ~= mode then
  return 0
end
redis.call('del', rwKey, leasesKey)
redis.call(publishCommand, channel, wakeAllMessage)
return 1
