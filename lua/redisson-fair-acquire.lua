-- Layout 'redisson': an attempt at Redisson's fair lock that queues when it is not granted
-- (RFairLock's lock() / tryLock(wait)): the owner joins the queue with a deadline of the time it
-- may have to wait plus `wait`, once. Writes exactly Redisson's effects
-- (docs/redisson-interop.md#fair-lock), except that a re-entry never shortens the TTL.
-- KEYS[1]  lock hash N: field <owner> = hold count; its TTL is the lease
-- KEYS[2]  queue redisson_lock_queue:{N}: list of waiting owners, first come first
-- KEYS[3]  deadlines redisson_lock_timeout:{N}: zset owner -> epoch ms on the client's clock
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id (<uuid>:<n>)
-- ARGV[3]  wait in ms (Redisson's order: wait before now): the same value for every attempt of one
--          acquisition, since the grant shifts the other deadlines by it
-- ARGV[4]  now: the client's Date.now(), as Java's System.currentTimeMillis()
-- Returns  {count} when acquired or re-entered (the owner's hold count after it), otherwise
--          Redisson's wait hint in ms (the lock's TTL, or the last waiter's time left), or -1 when
--          that is not above 0 (the caller backs off instead of spinning).
--          An error reply 'LOCKNAMECONFLICT <type> <structure> <key>' (nothing written) when N, the
--          queue or the deadlines hold another structure (see redisson-fair-guard)
local lockKey = KEYS[1]
local queueKey = KEYS[2]
local timeoutsKey = KEYS[3]
local leaseMs = math.ceil(tonumber(ARGV[1]))
local ownerId = ARGV[2]
local waitMs = tonumber(ARGV[3])
local now = tonumber(ARGV[4])

-- #include redisson-fair-guard
if lockConflict or queueConflict then
  return lockConflict or queueConflict
end
-- #include redisson-fair-drop-stale-heads
-- #include redisson-fair-grant
if holdCount then
  return { holdCount }
end

local ttl
if redis.call('zscore', timeoutsKey, ownerId) ~= false then
  -- Queued already: Redisson answers max(0, PTTL).
  ttl = redis.call('pttl', lockKey)
else
  local last = redis.call('lindex', queueKey, -1)
  local lastDeadline = false
  if last ~= false and last ~= ownerId then
    lastDeadline = redis.call('zscore', timeoutsKey, last)
  end
  if lastDeadline ~= false then
    ttl = tonumber(lastDeadline) - now
  else
    ttl = redis.call('pttl', lockKey)
  end
  if redis.call('zadd', timeoutsKey, ttl + waitMs + now, ownerId) == 1 then
    redis.call('rpush', queueKey, ownerId)
  end
end
if ttl <= 0 then
  return -1
end
return ttl
