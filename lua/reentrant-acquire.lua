-- Acquire or re-enter the reentrant lock (also the exclusive core of the fair lock's hash).
-- KEYS[1]  lock hash: field <owner id> = hold count, field <owner id>:rq = last applied request id,
--          field fence = the hold's fencing token; the key's TTL is the lease
-- KEYS[2]  fence: the last fencing token handed out for this name, kept ARGV[4] ms after its last use
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id
-- ARGV[3]  request id: a resent acquire (ioredis replays unanswered commands after a reconnect)
--          finds its own id already applied and does not raise the hold count twice
-- ARGV[4]  how long the fence key outlives its last use, in ms
-- Returns  {token} when acquired or re-entered (a re-entry keeps the hold's token), otherwise the
--          lock's remaining TTL in ms
local lockKey = KEYS[1]
local fenceKey = KEYS[2]
local leaseMs = math.ceil(tonumber(ARGV[1]))
local ownerId = ARGV[2]
local requestId = ARGV[3]
local fenceMemoryMs = ARGV[4]
local requestField = ownerId .. ':rq'

if redis.call('exists', lockKey) == 0 then
  local time = redis.call('time')
  -- #include fence-token
  redis.call('hset', lockKey, ownerId, 1, requestField, requestId, 'fence', tokenText)
  redis.call('pexpire', lockKey, leaseMs)
  return { token }
end

if redis.call('hexists', lockKey, ownerId) == 1 then
  -- #include lock-reenter
  return { tonumber(redis.call('hget', lockKey, 'fence')) or 0 }
end

return redis.call('pttl', lockKey)
