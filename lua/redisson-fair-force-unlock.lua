-- Layout 'redisson': delete Redisson's fair lock whoever holds it (RFairLock's forceUnlock), and
-- wake the queue's head. Exactly Redisson's effects (docs/redisson-interop.md#fair-lock).
-- KEYS[1]  lock hash N
-- KEYS[2]  queue redisson_lock_queue:{N}
-- KEYS[3]  deadlines redisson_lock_timeout:{N}
-- KEYS[4]  channel base redisson_lock__channel:{N} (the head's channel is <base>:<head owner>)
-- ARGV[1]  now: the client's Date.now()
-- ARGV[2]  publish command: 'PUBLISH', or 'SPUBLISH' (Redisson's sharded mode)
-- Returns  1 when a lock was deleted, 0 when it was already free; an error reply
--          'LOCKNAMECONFLICT ...' (nothing written) when N is no lock (another type, a hash whose
--          fields are not a lock's) or the queue or the deadlines hold another structure
local lockKey = KEYS[1]
local queueKey = KEYS[2]
local timeoutsKey = KEYS[3]
local channelBase = KEYS[4]
local now = tonumber(ARGV[1])
local publishCommand = ARGV[2]
-- No owner: any lock hash is deleted, whoever holds it.
local ownerId = ''

-- #include redisson-fair-guard
if lockConflict or queueConflict then
  return lockConflict or queueConflict
end
-- #include redisson-fair-drop-stale-heads
if redis.call('del', lockKey) == 1 then
  -- #include redisson-fair-wake-head
  return 1
end
return 0
