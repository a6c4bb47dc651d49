-- Delete a read-write lock held in the given mode, whoever holds it (or only while the write hold
-- with a given fencing token holds it); the waiters in its line get it in line order
-- (rw-grant-line), or, with nobody in line, every waiter on the channel is woken.
-- KEYS[1]  read-write hash (see rw-read-acquire.lua)
-- KEYS[2]  leases: sorted set owner id -> lease deadline (ms, server clock)
-- KEYS[3]  unlock channel
-- KEYS[4]  waiting line, KEYS[5] waiter deadlines, KEYS[6] waiters' last attempts, KEYS[7] fence
--          (see rw-read-acquire.lua)
-- ARGV[1]  mode the lock must be held in: 'read' or 'write'
-- ARGV[2]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[3]  unlock message that wakes every waiter
-- ARGV[4]  waiter timeout in ms: the longest lease a grant to a waiter starts with
-- ARGV[5]  the fence key's margin in ms (it lives until the clock passes its token, plus this: see fence-token.lua)
-- ARGV[6]  the fencing token the write hold must have ('' or absent: whoever holds it): the lock is
--          deleted only while it is held for writing with that token by a writer whose lease has
--          not ended (a read hold has no token)
-- Returns  1 when the lock was held in that mode (with that token) and deleted, 0 otherwise
local rwKey = KEYS[1]
local leasesKey = KEYS[2]
local channel = KEYS[3]
local lineKey = KEYS[4]
local deadlinesKey = KEYS[5]
local seenKey = KEYS[6]
local fenceKey = KEYS[7]
local mode = ARGV[1]
local publishCommand = ARGV[2]
local wakeAllMessage = ARGV[3]
local grantCapMs = ARGV[4]
local fenceMemoryMs = ARGV[5]
local expectedToken = ARGV[6] or ''

if redis.call('hget', rwKey, 'mode') ~= mode then
  return 0
end
-- #include server-clock
if expectedToken ~= '' then
  local writer = redis.call('hget', rwKey, 'writer')
  local deadline = writer and tonumber(redis.call('zscore', leasesKey, writer))
  if mode ~= 'write' or redis.call('hget', rwKey, 'fence') ~= expectedToken or not deadline or deadline <= now then
    return 0
  end
end
redis.call('del', rwKey, leasesKey)
-- Whoever held it was removed by force, not by a crash (see line-failed-grantee).
redis.call('hdel', seenKey, '~grant')
-- #include rw-serve-line
if wakeChannel then
  redis.call(publishCommand, channel, wakeAllMessage)
end
return 1
