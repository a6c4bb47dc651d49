-- Re-enter a hold the owner has of a lock hash (reentrant layout): one hold more, unless this very
-- request was applied already (a resend after a reconnect), and its lease either way. Each hold
-- keeps its own lease, so the lock lives as long as the longest: a re-entry with a shorter lease
-- never shortens it.
-- Expects  lockKey, ownerId, requestField (<owner id>:rq), requestId, leaseMs
-- Defines  nothing

-- A grant the line handed to this request (its ':handed:rq', which a re-entry of another request
-- does not overwrite) is applied already too.
if redis.call('hget', lockKey, requestField) ~= requestId and redis.call('hget', lockKey, ownerId .. ':handed:rq') ~= requestId then
  redis.call('hincrby', lockKey, ownerId, 1)
  redis.call('hset', lockKey, requestField, requestId)
end
if redis.call('pttl', lockKey) < tonumber(leaseMs) then
  redis.call('pexpire', lockKey, leaseMs)
end
