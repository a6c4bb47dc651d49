-- Renew the lease of a reentrant (or fair) lock held by the watchdog, or set it (minHoldTime).
-- KEYS[1]  lock hash
-- ARGV[1]  lease in ms
-- ARGV[2]  owner id
-- ARGV[3]  '1': extend only (the watchdog, a multi-lock's re-arm): a longer lease another hold of
--          the owner was granted is kept; otherwise the lease becomes exactly ARGV[1] (the release
--          of the last hold that leaves the lock to expire at its minHoldTime)
--          Exact applies to the owner's last hold only: when Redis counts more holds of the owner
--          (a re-entry of another flow of the same owner that ran first), it only extends, so that
--          hold keeps the lease it was granted (docs/owners-and-reentry.md)
-- ARGV[4]  the fencing token of the hold's episode ('' or absent: any): a renewal of an episode
--          that ended (the owner holds the lock again under a later token) renews nothing
-- Returns  1 when renewed, 0 when the owner no longer holds the lock (it was lost)
local lockKey = KEYS[1]
local leaseMs = math.ceil(tonumber(ARGV[1]))
local ownerId = ARGV[2]
local extendOnly = ARGV[3] == '1'
local episodeToken = ARGV[4] or ''

local state = redis.call('hmget', lockKey, ownerId, 'fence')
local holds = tonumber(state[1])
if holds and episodeToken ~= '' and state[2] ~= episodeToken then
  holds = nil
end
if holds then
  if holds > 1 then
    extendOnly = true
  end
  local ttl = redis.call('pttl', lockKey)
  if not extendOnly or ttl < leaseMs then
    redis.call('pexpire', lockKey, leaseMs)
  end
  return 1
end
return 0
