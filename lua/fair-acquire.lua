-- Acquire, re-enter, or wait in line for the fair lock.
-- KEYS[1]  lock hash, the reentrant lock's layout (field <owner id> = hold count, <owner id>:rq = last
--          applied request id; the key's TTL is the lease): the plain and the fair lock of a name are one lock
-- KEYS[2]  waiting line: list of owner ids, first come first
-- KEYS[3]  waiter deadlines: sorted set owner id -> deadline in ms on the server clock; a waiter that
--          stops refreshing its deadline (it crashed) is dropped once the deadline passes
-- KEYS[4]  fence: the last fencing token handed out for this name (see reentrant-acquire.lua)
-- ARGV[1]  lease in ms (a fraction is rounded up: PEXPIRE takes whole ms, and a failed one would leave the hold without a TTL)
-- ARGV[2]  owner id
-- ARGV[3]  request id: a resent acquire finds its own id applied and does not raise the hold count twice
-- ARGV[4]  waiter timeout in ms: a waiter's deadline is now + this, refreshed by each of its attempts
-- ARGV[5]  '1' to join (or keep a place in) the line when not granted; '0' for a single attempt that never joins
-- ARGV[6]  how long the fence key outlives its last use, in ms
-- Returns  {token} when acquired or re-entered (a re-entry keeps the hold's token); otherwise how long the caller may wait before retrying, in ms
--          (the lock's TTL, or the head waiter's deadline when the lock is free but others are ahead)
local lockKey = KEYS[1]
local lineKey = KEYS[2]
local deadlinesKey = KEYS[3]
local fenceKey = KEYS[4]
local leaseMs = math.ceil(tonumber(ARGV[1]))
local ownerId = ARGV[2]
local requestId = ARGV[3]
local waiterTimeoutMs = tonumber(ARGV[4])
local joinLine = ARGV[5] == '1'
local fenceMemoryMs = ARGV[6]
local requestField = ownerId .. ':rq'

-- #include server-clock

-- #include fair-drop-expired-waiters
local lineChanged = #expired > 0

local function rearmLine()
  -- #include fair-rearm-line
end

if redis.call('hexists', lockKey, ownerId) == 1 then
  -- #include lock-reenter
  if lineChanged then rearmLine() end
  return { tonumber(redis.call('hget', lockKey, 'fence')) or 0 }
end

if redis.call('exists', lockKey) == 0 then
  local head = redis.call('lindex', lineKey, 0)
  if head == false or head == ownerId then
    if head == ownerId then
      redis.call('lpop', lineKey)
      redis.call('zrem', deadlinesKey, ownerId)
      lineChanged = true
    end
    -- #include fence-token
    redis.call('hset', lockKey, ownerId, 1, requestField, requestId, 'fence', tokenText)
    redis.call('pexpire', lockKey, leaseMs)
    if lineChanged then rearmLine() end
    return { token }
  end
end

if joinLine then
  -- Once in line: a retry (or a resent attempt) only refreshes the deadline, it never queues twice.
  if redis.call('zscore', deadlinesKey, ownerId) == false then
    redis.call('rpush', lineKey, ownerId)
  end
  redis.call('zadd', deadlinesKey, now + waiterTimeoutMs, ownerId)
  lineChanged = true
end
if lineChanged then rearmLine() end

local ttl = redis.call('pttl', lockKey)
if ttl >= 0 then
  return ttl
end
if ttl == -1 then
  -- A lock without a TTL (not made by this library): retry at the waiter's heartbeat pace.
  return waiterTimeoutMs
end
-- Free, but someone is ahead: it takes the lock, or its deadline passes and it is dropped.
local head = redis.call('lindex', lineKey, 0)
local headDeadline = head and redis.call('zscore', deadlinesKey, head)
if headDeadline then
  return math.max(1, tonumber(headDeadline) - now)
end
return 1
