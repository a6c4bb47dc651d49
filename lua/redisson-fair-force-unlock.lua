-- Layout 'redisson': delete Redisson's fair lock whoever holds it (RFairLock's forceUnlock), and
-- wake the queue's head. Exactly Redisson's effects (docs/redisson-interop.md#fair-lock).
-- KEYS[1]  lock hash N
-- KEYS[2]  queue redisson_lock_queue:{N}
-- KEYS[3]  deadlines redisson_lock_timeout:{N}
-- KEYS[4]  channel base redisson_lock__channel:{N} (the head's channel is <base>:<head owner>)
-- ARGV[1]  now: the client's Date.now()
-- ARGV[2]  publish command: 'PUBLISH', or 'SPUBLISH' (Redisson's sharded mode)
-- Returns  1 when a lock was deleted, 0 when it was already free
local lockKey = KEYS[1]
local queueKey = KEYS[2]
local timeoutsKey = KEYS[3]
local channelBase = KEYS[4]
local now = tonumber(ARGV[1])
local publishCommand = ARGV[2]

-- #include redisson-fair-drop-stale-heads
if redis.call('del', lockKey) == 1 then
  -- #include redisson-fair-wake-head
  return 1
end
return 0
