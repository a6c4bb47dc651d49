-- Layout 'redisson': one attempt at Redisson's fair lock that never queues (RFairLock's no-wait
-- tryLock, waitTime 0). Writes exactly Redisson's effects (docs/redisson-interop.md#fair-lock),
-- except that a re-entry never shortens the TTL.
-- KEYS[1]  lock hash N: field <owner> = hold count; its TTL is the lease
-- KEYS[2]  queue redisson_lock_queue:{N}: list of waiting owners, first come first
-- KEYS[3]  deadlines redisson_lock_timeout:{N}: zset owner -> epoch ms on the client's clock
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id (<uuid>:<n>)
-- ARGV[3]  now: the client's Date.now(), as Java's System.currentTimeMillis()
-- ARGV[4]  wait in ms: every queued deadline moves this much earlier when the lock is granted
-- Returns  {count} when acquired or re-entered (the owner's hold count after it), otherwise the
--          lock's TTL in ms, or -1 when it tells nothing (no TTL, or the lock is free but the
--          queue's head is someone else): the caller backs off instead of spinning.
--          An error reply 'LOCKNAMECONFLICT <type> <structure> <key>' (nothing written) when N, the
--          queue or the deadlines hold another structure (see redisson-fair-guard)
local lockKey = KEYS[1]
local queueKey = KEYS[2]
local timeoutsKey = KEYS[3]
local leaseMs = math.ceil(tonumber(ARGV[1]))
local ownerId = ARGV[2]
local now = tonumber(ARGV[3])
local waitMs = tonumber(ARGV[4])

-- #include redisson-fair-guard
if lockConflict or queueConflict then
  return lockConflict or queueConflict
end
-- #include redisson-fair-drop-stale-heads
-- #include redisson-fair-grant
if holdCount then
  return { holdCount }
end
local ttl = redis.call('pttl', lockKey)
if ttl <= 0 then
  return -1
end
return ttl
