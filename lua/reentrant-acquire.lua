-- Acquire or re-enter the reentrant lock (also the exclusive core of the fair lock's hash).
-- KEYS[1]  lock hash: field <owner id> = hold count, field <owner id>:rq = last applied request id;
--          the key's TTL is the lease
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id
-- ARGV[3]  request id: a resent acquire (ioredis replays unanswered commands after a reconnect)
--          finds its own id already applied and does not raise the hold count twice
-- Returns  nil when acquired or re-entered, otherwise the lock's remaining TTL in ms
local lockKey = KEYS[1]
local leaseMs = ARGV[1]
local ownerId = ARGV[2]
local requestId = ARGV[3]
local requestField = ownerId .. ':rq'

if redis.call('exists', lockKey) == 0 then
  redis.call('hset', lockKey, ownerId, 1, requestField, requestId)
  redis.call('pexpire', lockKey, leaseMs)
  return nil
end

if redis.call('hexists', lockKey, ownerId) == 1 then
  if redis.call('hget', lockKey, requestField) ~= requestId then
    redis.call('hincrby', lockKey, ownerId, 1)
    redis.call('hset', lockKey, requestField, requestId)
  end
  redis.call('pexpire', lockKey, leaseMs)
  return nil
end

return redis.call('pttl', lockKey)
