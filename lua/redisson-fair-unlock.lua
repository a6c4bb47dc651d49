-- Layout 'redisson': release one hold of Redisson's fair lock (RFairLock's unlock), or, with a
-- guard, bring the owner's count down to what the process accounts for (giving back a grant it
-- never used). Writes exactly Redisson's effects (docs/redisson-interop.md#fair-lock), except that
-- a partial release leaves the TTL as it is. Only the queue's head is woken, on its own channel.
-- KEYS[1]  lock hash N: field <owner> = hold count
-- KEYS[2]  queue redisson_lock_queue:{N}
-- KEYS[3]  deadlines redisson_lock_timeout:{N}
-- KEYS[4]  channel base redisson_lock__channel:{N} (the head's channel is <base>:<head owner>)
-- KEYS[5]  this unlock call's latch redisson_unlock_latch:{N}:<32 hex>: a resend replays its answer
-- ARGV[1]  owner id
-- ARGV[2]  now: the client's Date.now()
-- ARGV[3]  publish command: 'PUBLISH', or 'SPUBLISH' (Redisson's sharded mode)
-- ARGV[4]  the latch's TTL in ms
-- ARGV[5]  guard: '' to release one hold; a count to bring the owner's count down to it (surplus
--          form: no write at all when the count is not above it)
-- Returns  1 when the lock is free after it, 0 when holds remain, nil when the owner holds none,
--          -1 (guard) when the count was not above the guard, 2 when N was missing (Redisson
--          answers 1 there; a replay through the latch answers its stored 1). When N is not a lock
--          the owner holds (another type, a foreign hash), nil; when the queue or the deadlines hold
--          another structure, an error reply 'LOCKNAMECONFLICT ...' (nothing written either way)
local lockKey = KEYS[1]
local queueKey = KEYS[2]
local timeoutsKey = KEYS[3]
local channelBase = KEYS[4]
local latchKey = KEYS[5]
local ownerId = ARGV[1]
local now = tonumber(ARGV[2])
local publishCommand = ARGV[3]
local latchTtlMs = tonumber(ARGV[4])
local guard = ARGV[5]

-- The surplus form (latch TTL 0) keeps no latch: a SET with PX 0 is an error, which would come
-- after the writes above it and before the head's wake-up.
local function answer(outcome)
  if latchTtlMs > 0 then
    redis.call('set', latchKey, outcome, 'px', latchTtlMs)
  end
end

if latchTtlMs > 0 then
  local replay = redis.call('get', latchKey)
  if replay ~= false then
    return tonumber(replay)
  end
end

-- #include redisson-fair-guard
if lockConflict then
  return nil
end
if queueConflict then
  return queueConflict
end

local removeBy = 1
if guard ~= '' then
  local count = tonumber(redis.call('hget', lockKey, ownerId))
  if count == nil then
    return nil
  end
  if count <= tonumber(guard) then
    return -1
  end
  removeBy = count - tonumber(guard)
end

-- #include redisson-fair-drop-stale-heads
if redis.call('exists', lockKey) == 0 then
  -- #include redisson-fair-wake-head
  answer(1)
  return 2
end
if redis.call('hexists', lockKey, ownerId) == 0 then
  return nil
end
local remaining = redis.call('hincrby', lockKey, ownerId, -removeBy)
if remaining > 0 then
  answer(0)
  return 0
end
redis.call('del', lockKey)
answer(1)
-- #include redisson-fair-wake-head
return 1
