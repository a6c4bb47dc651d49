-- Acquire, re-enter, or wait in line for the reentrant lock; the fair lock of the same name is the
-- same lock and runs this script too (its waiters only sleep on channels of their own).
-- KEYS[1]  lock hash: field <owner id> = hold count, field <owner id>:rq = last applied request id,
--          field fence = the hold's fencing token, field ~line = 1 once a line stands behind the hold
--          (a hold without it has had nobody in line: its release does not look); the key's TTL is
--          the lease
-- KEYS[2]  waiting line: list of waiter entries '<owner id> <request id> <lease ms> <p|f>', first
--          come first; exists only while someone waits
-- KEYS[3]  waiter deadlines: sorted set entry -> deadline in ms on the server clock; a waiter that
--          stops retrying (it crashed) leaves the line once its deadline passes
-- KEYS[4]  when each waiter last attempted: hash entry -> '<ms on the server clock> <send stamp>[ s]'
--          (see grant-timing; ' s': that attempt's seat was subscribed and heard, see line-join);
--          '~dead:<client id>' marks a client whose entries are skipped (line-live-head)
-- KEYS[5]  fence: the last fencing token handed out for this name, kept until the clock passes it (see fence-token.lua)
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id
-- ARGV[3]  request id: a resent acquire (ioredis replays unanswered commands after a reconnect)
--          finds its own id already applied and does not raise the hold count twice; a waiter the
--          lock was handed to finds its grant the same way
-- ARGV[4]  the fence key's margin in ms (it lives until the clock passes its token, plus this: see fence-token.lua)
-- ARGV[5]  this waiter's line entry when it waits (see KEYS[3]); '' for a single attempt that never
--          joins the line
-- ARGV[6]  waiter timeout in ms: a fair waiter's deadline is now + this (it retries three times
--          per timeout); a plain waiter, which sleeps until the lock's TTL, gets that TTL on top.
--          Also the longest lease a grant to a waiter starts with.
-- ARGV[7]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[8]  unlock message (for waiters of an older version)
-- ARGV[9]  this attempt's send stamp (the waiter's monotonic clock, in µs): kept with the time the
--          attempt reached Redis, so a grant message can date its lease (see grant-timing); it ends
--          in ' s' when the waiter's seat is subscribed (line-join checks it with Redis)
-- Returns  {token} when acquired or re-entered (a re-entry keeps the hold's token), otherwise how
--          long the caller may wait before retrying, in ms (the lock's TTL, -1 for a lock without
--          one, or the head waiter's deadline)
local lockKey = KEYS[1]
local lineKey = KEYS[2]
local deadlinesKey = KEYS[3]
local seenKey = KEYS[4]
local fenceKey = KEYS[5]
local leaseMs = math.ceil(tonumber(ARGV[1]))
local ownerId = ARGV[2]
local requestId = ARGV[3]
local fenceMemoryMs = ARGV[4]
local myEntry = ARGV[5]
local waiterTimeoutMs = tonumber(ARGV[6])
local grantCapMs = waiterTimeoutMs
local publishCommand = ARGV[7]
local unlockMessage = ARGV[8]
local attemptStamp = ARGV[9] or ''
local callerEntry = myEntry
local requestField = ownerId .. ':rq'

-- One call for both keys (how many of them exist): the uncontended attempt costs what it did
-- before the line.
local busyOrWaited = redis.call('exists', lockKey, lineKey)
if busyOrWaited == 0 or (busyOrWaited == 1 and redis.call('exists', lockKey) == 0) then
  -- Nobody holds it. Nobody waits either unless the line exists (only while someone waits).
  local free = true
  if busyOrWaited == 1 then
    -- Free, with waiters: the first live one gets it (the caller, when that is who stands first).
    -- #include line-grant-head
    -- Still free only when every waiter had left by its deadline (and none of an older version stands first).
    free = not grantedTo and redis.call('exists', lineKey) == 0
  end
  if free then
    local time = redis.call('time')
    -- #include fence-token
    redis.call('hset', lockKey, ownerId, 1, requestField, requestId, 'fence', tokenText)
    redis.call('pexpire', lockKey, leaseMs)
    return { token }
  end
end

if redis.call('hexists', lockKey, ownerId) == 1 then
  -- #include lock-reenter
  -- #include line-drop-own-entry
  return { tonumber(redis.call('hget', lockKey, 'fence')) or 0 }
end

local ttl = redis.call('pttl', lockKey)
if myEntry ~= '' then
  -- #include server-clock
  -- A plain waiter sleeps until the lock's TTL; a fair one heartbeats.
  local sleepsForMs = string.sub(myEntry, -1) == 'p' and math.max(ttl, 0) or 0
  local channel = lockKey .. ':channel'
  -- #include line-join
  if ttl ~= -2 then
    -- The hold's release looks for the line only when this is set (reentrant-release.lua).
    redis.call('hset', lockKey, '~line', 1)
  end
end
if ttl == -2 then
  -- Free, and left to a waiter of an older version that stands first: it tries by itself soon.
  return 50
end
return ttl
