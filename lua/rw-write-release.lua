-- Release one write hold of a read-write lock. The writer's last write hold admits many: readers
-- (and, after a downgrade, other readers beside the owner). With waiters in line it admits them in
-- line order (rw-grant-line); without, it wakes every waiter on the channel.
-- KEYS[1]  read-write hash (see rw-read-acquire.lua)
-- KEYS[2]  leases: sorted set owner id -> lease deadline (ms, server clock)
-- KEYS[3]  unlock channel
-- KEYS[4]  release record: the outcome of this request, kept for ARGV[2] ms so that a resent
--          release returns its first answer instead of "not held"
-- KEYS[5]  waiting line, KEYS[6] waiter deadlines, KEYS[7] waiters' last attempts, KEYS[8] fence
--          (see rw-read-acquire.lua)
-- ARGV[1]  owner id
-- ARGV[2]  how long to keep the release record, in ms
-- ARGV[3]  publish command: 'publish', or 'spublish' on a cluster
-- ARGV[4]  unlock message that wakes every waiter
-- ARGV[5]  '' for a plain release; an acquire request id to release only the hold that request
--          granted (see reentrant-release.lua)
-- ARGV[6]  waiter timeout in ms: the longest lease a grant to a waiter starts with
-- ARGV[7]  the fence key's margin in ms (it lives until the clock passes its token, plus this: see fence-token.lua)
-- ARGV[8]  the fencing token of the write hold being released, as the caller holds it ('' when
--          unknown): a write hold of another episode (the owner writes again under a later token)
--          is not released
-- Returns  nil when the owner holds no write lock (and no read lock); -1 when it holds no write lock
--          but holds a read lock; 0 when the owner still holds something; 1 when it holds nothing more
-- #include rw-release-start
local wakeAllMessage = ARGV[4]

local heldToken = ARGV[8] or ''
local readsToo = redis.call('hexists', rwKey, readField) == 1
local writerState = redis.call('hmget', rwKey, 'writer', 'fence')
if writerState[1] == ownerId and heldToken ~= '' and writerState[2] ~= heldToken then
  -- That hold's episode ended: never a write hold of a later one.
  return nil
end
if writerState[1] ~= ownerId then
  if readsToo then
    return HOLDS_OTHER_MODE
  end
  return nil
end

local outcome = 0
local writes = tonumber(redis.call('hget', rwKey, 'writes'))
if writes > 1 then
  redis.call('hset', rwKey, 'writes', writes - 1)
else
  redis.call('hdel', rwKey, 'writer', 'writes')
  if readsToo then
    -- Downgrade: the owner goes on reading, and other readers may now join it.
    redis.call('hset', rwKey, 'mode', 'read')
  else
    redis.call('hdel', rwKey, requestField)
    redis.call('zrem', leasesKey, ownerId)
    outcome = 1
  end
end

-- #include rw-rearm
if writes <= 1 then
  -- The writer a grant went to released it: its grant was taken (see line-failed-grantee).
  if redis.call('hget', seenKey, '~grant') == ownerId then
    redis.call('hdel', seenKey, '~grant')
  end
  -- #include rw-serve-line
  if wakeChannel then
    redis.call(publishCommand, channel, wakeAllMessage)
  end
end
if grantedBy == '' then
  redis.call('set', recordKey, outcome, 'px', recordTtlMs)
end
return outcome
