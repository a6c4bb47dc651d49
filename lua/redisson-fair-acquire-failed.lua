-- Layout 'redisson': a waiter gives up on Redisson's fair lock (RFairLock's acquireFailed): every
-- owner queued behind it has its deadline moved `wait` earlier, and it leaves the queue and the
-- deadlines. Exactly Redisson's effects (docs/redisson-interop.md#fair-lock).
-- KEYS[1]  queue redisson_lock_queue:{N}
-- KEYS[2]  deadlines redisson_lock_timeout:{N}
-- ARGV[1]  owner id
-- ARGV[2]  wait in ms: the value the owner queued with
-- Returns  1 when the owner was queued, 0 when it was not; an error reply 'LOCKNAMECONFLICT ...'
--          (nothing written) when the queue is no list or the deadlines no sorted set
local queueKey = KEYS[1]
local timeoutsKey = KEYS[2]
local ownerId = ARGV[1]
local waitMs = tonumber(ARGV[2])

-- #include redisson-key-guard
local queueType = keyType(queueKey)
if queueType ~= 'none' and queueType ~= 'list' then
  return conflict(queueType, 'fair-queue', queueKey)
end
local timeoutsType = keyType(timeoutsKey)
if timeoutsType ~= 'none' and timeoutsType ~= 'zset' then
  return conflict(timeoutsType, 'fair-deadlines', timeoutsKey)
end

local queue = redis.call('lrange', queueKey, 0, -1)
local position = 1
while position <= #queue and queue[position] ~= ownerId do
  position = position + 1
end
for behind = position + 1, #queue do
  redis.call('zincrby', timeoutsKey, -waitMs, queue[behind])
end
redis.call('zrem', timeoutsKey, ownerId)
redis.call('lrem', queueKey, 0, ownerId)
if position <= #queue then
  return 1
end
return 0
