-- Take, or re-arm, a RedLock on one of its masters. The hold count stays 1 on every master:
-- re-entry is counted by the owning process, so a repeated or resent attempt never stacks holds
-- that a single release would not remove.
-- KEYS[1]  lock hash, the reentrant layout (field <owner id> = 1, field fence = this master's token
--          for the hold; the key's TTL is the lease), so a RedLock and a plain lock of the same name
--          on one server exclude each other
-- KEYS[2]  fence: the last fencing token handed out for this name on this master
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id
-- ARGV[3]  the fence key's margin in ms (it lives until the clock passes its token, plus this: see fence-token.lua)
-- ARGV[4]  '1': re-arm only (a re-entry of a hold the owning process counts): never a new hold
-- Returns  {token} when taken or re-armed (a re-arm keeps the hold's token), otherwise the lock's
--          remaining TTL in ms; -4 when re-arm only and the owner holds nothing here. The RedLock's token is the largest of the granting masters', raised
--          on them afterwards by redlock-fence.lua
local lockKey = KEYS[1]
local fenceKey = KEYS[2]
local leaseMs = ARGV[1]
local ownerId = ARGV[2]
local fenceMemoryMs = ARGV[3]
local rearmOnly = ARGV[4] == '1'

if redis.call('hexists', lockKey, ownerId) == 1 then
  -- A re-entry never shortens the lease another hold of the owner was granted.
  if redis.call('pttl', lockKey) < tonumber(leaseMs) then
    redis.call('pexpire', lockKey, leaseMs)
  end
  return { tonumber(redis.call('hget', lockKey, 'fence')) or 0 }
end
if rearmOnly then
  return -4
end
if redis.call('exists', lockKey) == 0 then
  local time = redis.call('time')
  -- #include fence-token
  redis.call('hset', lockKey, ownerId, 1, 'fence', tokenText)
  redis.call('pexpire', lockKey, leaseMs)
  return { token }
end
return redis.call('pttl', lockKey)
