-- Re-enter a hold the owner has of a lock hash (reentrant layout): one hold more, unless this very
-- request was applied already (a resend after a reconnect), and a fresh lease either way.
-- Expects  lockKey, ownerId, requestField (<owner id>:rq), requestId, leaseMs
-- Defines  nothing

if redis.call('hget', lockKey, requestField) ~= requestId then
  redis.call('hincrby', lockKey, ownerId, 1)
  redis.call('hset', lockKey, requestField, requestId)
end
redis.call('pexpire', lockKey, leaseMs)
