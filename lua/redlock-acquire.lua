-- Take, or re-arm, a RedLock on one of its masters. The hold count stays 1 on every master:
-- re-entry is counted by the owning process, so a repeated or resent attempt never stacks holds
-- that a single release would not remove.
-- KEYS[1]  lock hash, the reentrant layout (field <owner id> = 1; the key's TTL is the lease), so a
--          RedLock and a plain lock of the same name on one server exclude each other
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id
-- Returns  nil when taken or re-armed, otherwise the lock's remaining TTL in ms
local lockKey = KEYS[1]
local leaseMs = ARGV[1]
local ownerId = ARGV[2]

if redis.call('exists', lockKey) == 0 or redis.call('hexists', lockKey, ownerId) == 1 then
  redis.call('hset', lockKey, ownerId, 1)
  redis.call('pexpire', lockKey, leaseMs)
  return nil
end
return redis.call('pttl', lockKey)
