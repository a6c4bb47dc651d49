-- Release one hold of a lock in Redisson's layout (RLock, RFencedLock): exactly the writes of
-- Redisson's unlockInnerAsync (docs/redisson-interop.md#plain-lock), except that a partial release
-- leaves the TTL as it is (Redisson sets it to its lease; ours is renewed by our watchdog). Or, in
-- surplus form, take back the counts Redis holds for the owner beyond what its process accounts
-- for (a resent or late grant nobody uses), leaving those it accounts for untouched.
-- KEYS[1]  the lock hash N
-- KEYS[2]  its channel redisson_lock__channel:{N} (message '0' wakes one waiter per process or JVM)
-- KEYS[3]  this unlock call's latch redisson_unlock_latch:{N}:<32 hex>: its answer, for a resend
-- ARGV[1]  owner id
-- ARGV[2]  publish command: 'PUBLISH', or 'SPUBLISH' where Redisson uses sharded pub/sub
-- ARGV[3]  how long the latch keeps the answer, in ms (0: no latch, the surplus form)
-- ARGV[4]  '' to release one hold; a number: the surplus form, down to that many holds
-- Returns  nil when the owner holds nothing (also when N is no hash: nothing written), 0 when holds
--          remain, 1 when the lock was released; -1 in surplus form when Redis held no more than the
--          number (nothing written)
local lockKey = KEYS[1]
local channel = KEYS[2]
local latchKey = KEYS[3]
local ownerId = ARGV[1]
local publishCommand = ARGV[2]
local latchTtlMs = tonumber(ARGV[3])
local guard = tonumber(ARGV[4])

-- #include redisson-unlock-latch
-- A key of another type holds no hold of ours (pcall: no extra command on the usual path).
local stored = redis.pcall('hget', lockKey, ownerId)
if type(stored) == 'table' then
  return nil
end
local held = tonumber(stored)
if not held then
  return nil
end
local by = -1
if guard then
  if held <= guard then
    return -1
  end
  by = guard - held
end
local outcome = 1
if redis.call('hincrby', lockKey, ownerId, by) > 0 then
  outcome = 0
else
  redis.call('del', lockKey)
  redis.call(publishCommand, channel, '0')
end
return answered(outcome)
