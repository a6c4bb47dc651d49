-- Acquire or re-enter the write lock of a read-write lock, or wait in its line.
-- KEYS[1]  read-write hash (see rw-read-acquire.lua)
-- KEYS[2]  leases: sorted set owner id -> lease deadline (ms, server clock)
-- KEYS[3]  waiting line, KEYS[4] waiter deadlines, KEYS[5] waiters' last attempts (see rw-read-acquire.lua)
-- KEYS[6]  fence: the last fencing token handed out for this name (see reentrant-acquire.lua); the
--          hash's field fence holds the current write hold's token
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id
-- ARGV[3]  request id: a resent acquire finds its own id applied and does not raise the hold count
--          twice; a waiter the lock was handed to finds its grant the same way (and gets its full lease)
-- ARGV[4]  the fence key's margin in ms (it lives until the clock passes its token, plus this: see fence-token.lua)
-- ARGV[5]  this waiter's line entry when it waits; '' for a single attempt that never joins the line
-- ARGV[6]  waiter timeout in ms (see rw-read-acquire.lua)
-- ARGV[7]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[8]  this attempt's send stamp (µs, the waiter's monotonic clock; see grant-timing), ending
--          in ' s' when the waiter's seat is subscribed (line-join checks it with Redis)
-- ARGV[9]  '1': re-entry only (a body's call chain asking again, docs/owners-and-reentry.md#the-owner-model):
--          re-enter the owner's write hold, never start a new one
-- Returns  {token} when acquired or re-entered (a re-entry keeps the hold's token); -3 when the owner holds only the read lock (an upgrade,
--          which would wait forever: refused at once); otherwise the lock's remaining TTL in ms;
--          -4 when re-entry only and the owner is not the writer
local rwKey = KEYS[1]
local leasesKey = KEYS[2]
local lineKey = KEYS[3]
local deadlinesKey = KEYS[4]
local seenKey = KEYS[5]
local fenceKey = KEYS[6]
local leaseMs = math.ceil(tonumber(ARGV[1]))
local ownerId = ARGV[2]
local requestId = ARGV[3]
local fenceMemoryMs = ARGV[4]
local myEntry = ARGV[5] or ''
local waiterTimeoutMs = tonumber(ARGV[6])
local grantCapMs = waiterTimeoutMs
local publishCommand = ARGV[7]
local attemptStamp = ARGV[8] or ''
local reenterOnly = ARGV[9] == '1'
local callerEntry = myEntry
local readField = 'read:' .. ownerId
local requestField = 'rq:' .. ownerId
local UPGRADE_REFUSED = -3

-- #include server-clock

-- #include rw-drop-expired-owners
if redis.call('zcard', leasesKey) == 0 then
  redis.call('del', rwKey, leasesKey)
end
if redis.call('exists', lineKey) == 1 then
  -- The lock may admit waiters now (a holder's lease ran out, or this waiter's grant is due).
  -- #include rw-grant-line
end

-- After rw-grant-line a free lock has no line: the fast path below is today's.
local mode = redis.call('hget', rwKey, 'mode')
local granted = false
if reenterOnly and not (mode == 'write' and redis.call('hget', rwKey, 'writer') == ownerId) then
  if mode == 'read' and redis.call('hexists', rwKey, readField) == 1 then
    return UPGRADE_REFUSED
  end
  if redis.call('hexists', rwKey, readField) == 0 then
    -- The owner holds nothing: a lease entry of its own left behind ends too.
    redis.call('zrem', leasesKey, ownerId)
  end
  return -4
end
if mode == false then
  -- #include fence-token
  redis.call('hset', rwKey, 'mode', 'write', 'writer', ownerId, 'writes', 1, requestField, requestId, 'fence', tokenText)
  granted = true
elseif mode == 'write' and redis.call('hget', rwKey, 'writer') == ownerId then
  -- Applied already: the last request, or the one the line handed the lock to (rw-grant-line).
  if redis.call('hget', rwKey, requestField) ~= requestId and redis.call('hget', rwKey, 'handed:rq:' .. ownerId) ~= requestId then
    redis.call('hincrby', rwKey, 'writes', 1)
    redis.call('hset', rwKey, requestField, requestId)
  end
  granted = true
end

if granted then
  -- GT: a hold with a shorter lease (a read inside a write) never shortens the owner's lease.
  redis.call('zadd', leasesKey, 'gt', now + leaseMs, ownerId)
  -- #include rw-expire-with-longest-lease
  -- #include line-drop-own-entry
  return { tonumber(redis.call('hget', rwKey, 'fence')) or 0 }
end

if mode == 'read' and redis.call('hexists', rwKey, readField) == 1 then
  return UPGRADE_REFUSED
end
local ttl = redis.call('pttl', rwKey)
if myEntry ~= '' then
  local sleepsForMs = math.max(ttl, 0)
  local channel = rwKey .. ':channel'
  -- #include line-join
end
return ttl
