-- Redisson's fair lock: the grant and the re-entry every acquire runs. A free lock goes to the
-- owner when nobody queues or the owner heads the queue: it leaves the queue, and every remaining
-- deadline moves `waitMs` earlier (Redisson's shift, by the grantee's wait). A re-entry adds one
-- hold and extends the TTL to the lease, never shortening it (a deliberate, Java-invisible
-- deviation: Redisson sets the lease exactly; docs/redisson-interop.md#fair-lock).
-- Expects  lockKey, queueKey, timeoutsKey, ownerId, leaseMs, waitMs
-- Defines  holdCount (the owner's count after the grant or re-entry; nil when neither happened)

local holdCount = nil
if redis.call('exists', lockKey) == 0
  and (redis.call('exists', queueKey) == 0 or redis.call('lindex', queueKey, 0) == ownerId) then
  redis.call('lpop', queueKey)
  redis.call('zrem', timeoutsKey, ownerId)
  local waiting = redis.call('zrange', timeoutsKey, 0, -1)
  for _, waiter in ipairs(waiting) do
    redis.call('zincrby', timeoutsKey, -waitMs, waiter)
  end
  redis.call('hset', lockKey, ownerId, 1)
  redis.call('pexpire', lockKey, leaseMs)
  holdCount = 1
elseif redis.call('hexists', lockKey, ownerId) == 1 then
  holdCount = redis.call('hincrby', lockKey, ownerId, 1)
  if redis.call('pttl', lockKey) < leaseMs then
    redis.call('pexpire', lockKey, leaseMs)
  end
end
