-- Renew the lease of a reentrant (or fair) lock held by the watchdog.
-- KEYS[1]  lock hash
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id
-- Returns  1 when renewed, 0 when the owner no longer holds the lock (it was lost)
local lockKey = KEYS[1]
local leaseMs = ARGV[1]
local ownerId = ARGV[2]

if redis.call('hexists', lockKey, ownerId) == 1 then
  redis.call('pexpire', lockKey, leaseMs)
  return 1
end
return 0
